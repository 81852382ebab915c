"""What a file's first bytes say it is. A web page saved under a PDF's name, or a Word
97-2003 document renamed .docx, was skipped with its parser's complaint ("PdfStreamError:
Stream has ended unexpectedly", "BadZipFile: File is not a zip file"), which tells a user
nothing to act on."""

from __future__ import annotations

import codecs

_ZIP = (b"PK\x03\x04", b"PK\x05\x06")  # an archive with files, an empty one
_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # Office 97-2003 files: .doc, .xls, .ppt
_HTML = (b"<!doctype html", b"<html")
_PDF = b"%PDF-"
_HEAD = 1024  # a PDF may put up to this many bytes before its "%PDF-"
# The formats checked, as a reason names them.
_NAMED = {".pdf": "a PDF", ".docx": "a Word document", ".epub": "an EPUB book", ".odt": "an OpenDocument text"}


def mislabelled(suffix: str, data: bytes) -> str:
    """Why the file is not what its name says; "" where it begins as such a file does, or
    its format is not one checked here."""
    if suffix not in _NAMED:
        return ""
    begins = _PDF in data[:_HEAD] if suffix == ".pdf" else data.startswith(_ZIP)
    return "" if begins else f"not {_NAMED[suffix]}: {_held(data)}"


def _held(data: bytes) -> str:
    head = data[:_HEAD].removeprefix(codecs.BOM_UTF8).lstrip().lower()
    if head.startswith(_HTML):
        return "it holds a web page (saved under this name?)"
    if data.startswith(_OLE):
        return "it is an Office 97-2003 file (a .doc saved as .docx is read)"
    if _PDF in data[:_HEAD]:
        return "it is a PDF"
    if data.startswith(_ZIP):
        return "it is a zip archive"
    return "it does not begin as one does (damaged, or another kind of file)"
