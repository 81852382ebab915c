"""EPUB books and OpenDocument text, read from their zip archives."""

from __future__ import annotations

import gzip
import io
import zipfile
from pathlib import Path

import pytest

from iterretgen_tui.engine.indexing import documents
from iterretgen_tui.engine.indexing.chunking import ChunkOptions
from iterretgen_tui.engine.indexing.documents import SkipFile


def zipped(files: dict[str, str]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return out.getvalue()


CONTAINER = (
    '<container xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
    '<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
    "</rootfiles></container>"
)
PACKAGE = (
    '<package xmlns="http://www.idpf.org/2007/opf" xmlns:dc="http://purl.org/dc/elements/1.1/">'
    "<metadata><dc:title>Birds of the River</dc:title></metadata><manifest>"
    '<item id="c2" href="text/chapter%202.xhtml" media-type="application/xhtml+xml"/>'
    '<item id="c1" href="text/one.xhtml" media-type="application/xhtml+xml"/>'
    '<item id="css" href="style.css" media-type="text/css"/>'
    '<item id="gone" href="text/missing.xhtml" media-type="application/xhtml+xml"/>'
    '</manifest><spine><itemref idref="c1"/><itemref idref="css"/><itemref idref="gone"/>'
    '<itemref idref="c2"/></spine></package>'
)


def book(**extra: str) -> bytes:
    return zipped(
        {
            "mimetype": "application/epub+zip",
            "META-INF/container.xml": CONTAINER,
            "OEBPS/content.opf": PACKAGE,
            "OEBPS/text/one.xhtml": "<html><body><h1>Herons</h1><p>The grey heron waits.</p></body></html>",
            "OEBPS/text/chapter 2.xhtml": "<html><body><h1>Kingfishers</h1><p>A kingfisher dives.</p></body></html>",
            "OEBPS/style.css": "p { color: red }",
            **extra,
        }
    )


def read(tmp_path: Path, name: str, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return documents.passages(path, data, ChunkOptions(100, 0))


def test_an_epub_reads_its_chapters_in_reading_order(tmp_path):
    chunks = read(tmp_path, "birds.epub", book())
    assert [(c.heading, c.location, c.text) for c in chunks] == [
        ("Birds of the River › Herons", "part 1", "The grey heron waits."),
        ("Birds of the River › Kingfishers", "part 4", "A kingfisher dives."),
    ]


def test_an_odt_reads_its_headings_and_paragraphs(tmp_path):
    ns = (
        'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"'
    )
    content = (
        f"<office:document-content {ns}><office:body><office:text>"
        "<text:h>Thermostat</text:h>"
        "<text:p>Hold <text:span>MODE</text:span> for<text:s text:c='2'/>five seconds.<text:note>"
        "<text:note-citation>1</text:note-citation><text:note-body><text:p>Older models: ten.</text:p>"
        "</text:note-body></text:note></text:p><text:p/>"
        "<text:list><text:list-item><text:p>Then release it.</text:p></text:list-item></text:list>"
        "</office:text></office:body></office:document-content>"
    )
    meta = (
        '<office:document-meta xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        'xmlns:dc="http://purl.org/dc/elements/1.1/"><office:meta><dc:title>Manual</dc:title>'
        "</office:meta></office:document-meta>"
    )
    [chunk] = read(tmp_path, "manual.odt", zipped({"content.xml": content, "meta.xml": meta}))
    assert chunk.heading == "Manual › Thermostat" and chunk.location == "paragraphs 2-5"
    assert chunk.text == "Hold MODE for five seconds.\nOlder models: ten.\nThen release it."


@pytest.mark.parametrize(
    "name, data, reason",
    [
        ("locked.epub", book(**{"META-INF/encryption.xml": "<encryption/>"}), "EPUB with encrypted content"),
        ("torn.epub", b"PK\x03\x04 no zip", "cannot read EPUB"),
        ("bare.epub", zipped({"mimetype": "application/epub+zip"}), "cannot read EPUB"),
        ("torn.odt", zipped({"content.xml": "<office:document-content"}), "cannot read OpenDocument text"),
        ("sheet.xlsx", zipped({"xl/workbook.xml": "<workbook/>"}), "not a format it reads: a spreadsheet"),
        ("old.doc", b"\xd0\xcf\x11\xe0 compound file", "not a format it reads: a Word 97-2003 document"),
        # Named for another format than the one they hold: what they hold, not a parser's complaint.
        ("paper.pdf", b"\xef\xbb\xbf\n<!DOCTYPE html><title>Access denied</title>", "not a PDF: it holds a web page"),
        ("noise.pdf", bytes(range(256)) * 8, "not a PDF: it does not begin as one does"),
        (
            "renamed.docx",
            b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(512),
            "not a Word document: it is an Office 97-2003 file",
        ),
        ("book.epub", b"%PDF-1.7\n", "not an EPUB book: it is a PDF"),
        ("notes.odt.gz", gzip.compress(b"plain words"), "not an OpenDocument text: it does not begin"),
    ],
)
def test_damaged_or_unread_packages_are_skipped_with_their_reason(tmp_path, name, data, reason):
    with pytest.raises(SkipFile) as caught:
        read(tmp_path, name, data)
    assert caught.value.reason.startswith(reason)


def test_a_gzipped_file_is_read_as_the_file_it_holds(tmp_path):
    import gzip

    [chunk] = read(tmp_path, "notes.md.gz", gzip.compress(b"# Herons\n\nThe grey heron waits.\n"))
    assert (chunk.heading, chunk.text) == ("Herons", "# Herons\nThe grey heron waits.")
    for name, data, reason in (
        ("torn.txt.gz", gzip.compress(b"some words " * 50)[:30], "cannot decompress"),
        ("bundle.tar.gz", gzip.compress(b"x"), "not a format it reads: an archive"),
    ):
        with pytest.raises(SkipFile, match=reason):
            read(tmp_path, name, data)
