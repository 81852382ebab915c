"""The Textual front end. Nothing here runs model code on the UI thread: the session is
driven from thread workers (see app.py), and the engine never imports this package."""
