"""iterretgen-chat: offline Iter-RetGen chat over your own documents."""

__version__ = "0.1.0"
