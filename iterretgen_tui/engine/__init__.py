"""The engine: documents, index, retrieval, generation and the Iter-RetGen loop.

Nothing in this package imports the UI; scripts, tests and the CLI use it alone.
"""
