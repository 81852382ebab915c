"""Documents packaged as zip archives of XML: EPUB books and OpenDocument text (.odt).
Read as bytes, both were skipped as binary files.

An EPUB is its reading order's XHTML documents, each read as HTML; a block's number is
its document's place in that order ("part 3"). An .odt is its paragraphs and headings in
order, numbered like a Word document's paragraphs.
"""

from __future__ import annotations

import io
import posixpath
import zipfile
from dataclasses import replace
from urllib.parse import unquote
from xml.etree import ElementTree

from .formats import Block, Parsed, SkipFile, brief, html

_CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"
_OPF = "{http://www.idpf.org/2007/opf}"
_DC = "{http://purl.org/dc/elements/1.1/}"
_OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
_HTML_TYPES = ("application/xhtml+xml", "text/html")


def epub(data: bytes) -> Parsed:
    try:
        book = zipfile.ZipFile(io.BytesIO(data))
        if "META-INF/encryption.xml" in book.namelist():
            raise SkipFile("EPUB with encrypted content (DRM)")
        container = ElementTree.fromstring(book.read("META-INF/container.xml"))
        package_path = container.find(f".//{_CONTAINER}rootfile").get("full-path")
        package = ElementTree.fromstring(book.read(package_path))
    except SkipFile:
        raise
    except (zipfile.BadZipFile, KeyError, AttributeError, ElementTree.ParseError) as exc:
        raise SkipFile(f"cannot read EPUB: {brief(exc)}") from None
    title = package.findtext(f".//{_DC}title") or ""
    items = {item.get("id"): item for item in package.iter(f"{_OPF}item")}
    folder = posixpath.dirname(package_path)
    blocks: list[Block] = []
    for number, ref in enumerate(package.iter(f"{_OPF}itemref"), 1):
        item = items.get(ref.get("idref"))
        if item is None or item.get("media-type") not in _HTML_TYPES:
            continue
        try:
            page = book.read(posixpath.normpath(posixpath.join(folder, unquote(item.get("href", "")))))
        except KeyError:  # a reading order that names a missing document: the rest still reads
            continue
        blocks += [replace(block, number=number) for block in html(page.decode("utf-8", "replace")).blocks]
    return Parsed(title.strip(), blocks, "part")


def odt(data: bytes) -> Parsed:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        content = ElementTree.fromstring(archive.read("content.xml"))
        meta = ElementTree.fromstring(archive.read("meta.xml")) if "meta.xml" in archive.namelist() else None
    except (zipfile.BadZipFile, KeyError, ElementTree.ParseError) as exc:
        raise SkipFile(f"cannot read OpenDocument text: {brief(exc)}") from None
    title = (meta.findtext(f".//{_DC}title") if meta is not None else "") or ""
    body = content.find(f"{_OFFICE}body/{_OFFICE}text")
    blocks, heading = [], ""
    paragraphs = [e for e in body.iter() if e.tag in (f"{_TEXT}h", f"{_TEXT}p")] if body is not None else []
    for number, element in enumerate(paragraphs, 1):
        text = _text_of(element).strip()
        if element.tag == f"{_TEXT}h":
            heading = text or heading  # a heading titles its section's passages, as in Word
        elif text:
            blocks.append(Block(text, number, heading=heading))
    return Parsed(title.strip(), blocks, "paragraph")


def _text_of(element: ElementTree.Element) -> str:
    """A paragraph's text as shown: spaces, tabs and line breaks drawn, a footnote's own
    paragraphs left to be read as paragraphs of their own."""
    parts = [element.text or ""]
    for child in element:
        if child.tag == f"{_TEXT}s":
            parts.append(" " * int(child.get(f"{_TEXT}c", "1")))
        elif child.tag == f"{_TEXT}tab":
            parts.append("\t")
        elif child.tag == f"{_TEXT}line-break":
            parts.append("\n")
        elif child.tag not in (f"{_TEXT}note", f"{_TEXT}h", f"{_TEXT}p"):
            parts.append(_text_of(child))
        parts.append(child.tail or "")
    return "".join(parts)
