"""A document folder built by the tests: every supported format and every broken input."""

from __future__ import annotations

import os
from pathlib import Path

SMALL_CAP = 64 * 1024  # the size cap the tests index with; huge.txt is over it


def pdf_bytes(pages: list[list[str]], title: str = "") -> bytes:
    """A minimal valid PDF, written by hand: one text line per string, Helvetica."""
    n = len(pages)
    kids = " ".join(f"{5 + 2 * i} 0 R" for i in range(n))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {n} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        f"<< /Title ({title}) >>".encode(),
    ]
    for i, lines in enumerate(pages):
        ops = "BT /F1 12 Tf 72 720 Td 14 TL " + " ".join(f"({line}) Tj T*" for line in lines) + " ET"
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {6 + 2 * i} 0 R >>".encode()
        )
        objects.append(f"<< /Length {len(ops)} >>\nstream\n{ops}\nendstream".encode())
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R /Info 4 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def docx_bytes(path: Path) -> None:
    import docx

    document = docx.Document()
    document.core_properties.title = "Quarterly Report"
    document.add_heading("Revenue", level=1)
    document.add_paragraph("Revenue grew in the northern region thanks to pelican sales.")
    document.add_heading("Staff", level=1)
    document.add_paragraph("The staff count stayed at forty engineers.")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "quarter", "kiwis"
    table.cell(1, 0).text, table.cell(1, 1).text = "Q3", "1200"
    document.save(path)


GOOD = {  # file name -> a word only that file contains
    "notes.md": "aardvark",
    "guide.rst": "bumblebee",
    "page.html": "chinchilla",
    "paper.pdf": "dromedary",
    "report.docx": "pelican",
    "script.py": "echidna",
    "Makefile": "flamingo",
    "latin1.txt": "gazelle",
    "cp1252.txt": "hedgehog",
    "utf16.txt": "ibex",
    "nested/deep/leaf.txt": "jackal",
}
BROKEN = {  # path -> the start of its skip reason
    "corrupt.pdf": "cannot read PDF",
    "corrupt.docx": "cannot read Word document",
    "image.png": "cannot read image",
    "program.bin": "binary file",
    "empty.txt": "empty file",
    "blank.md": "no text found",
    "huge.txt": "too large",
    "loop": "symlink loop",
    "dangling": "dangling symlink",
    "nested/up": "symlink loop",
    "pipe": "not a regular file",
}


def build(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "notes.md").write_text(
        "---\ntitle: Field Notes\n---\n# Animals\n\nThe aardvark digs at night.\n\n"
        "```sh\n# not a heading\necho hi\n```\n\n## Birds\n\nSeen today: a heron.\n",
        "utf-8",
    )
    (root / "guide.rst").write_text(
        "User Guide\n==========\n\nIntro text.\n\nInstall\n-------\n\nA bumblebee installs it.\n", "utf-8"
    )
    (root / "page.html").write_text(
        "<html><head><title>Zoo Page</title><style>.secret { color: red }</style>\n"
        "<script>var hiddenscript = 1;</script></head>\n<body><h1>Mammals</h1>\n"
        "<p>The chinchilla is soft.</p><!-- hiddencomment --><div hidden>hiddendiv</div>\n</body></html>\n",
        "utf-8",
    )
    (root / "paper.pdf").write_bytes(
        pdf_bytes([["Introduction", "The camel is large."], ["Results", "The dromedary has one hump."]], "Desert Study")
    )
    docx_bytes(root / "report.docx")
    (root / "script.py").write_text("def echidna():\n    return 'spiny'\n", "utf-8")
    (root / "Makefile").write_text("flamingo:\n\techo pink\n", "utf-8")
    (root / "latin1.txt").write_bytes("Le gazelle café naïve à côté déjà".encode("latin-1"))
    (root / "cp1252.txt").write_bytes("The hedgehog’s “quoted” résumé costs €5".encode("cp1252"))
    (root / "utf16.txt").write_bytes("The ibex climbs.".encode("utf-16"))
    (root / "nested" / "deep").mkdir(parents=True, exist_ok=True)
    (root / "nested" / "deep" / "leaf.txt").write_text("A jackal at the leaf.\n", "utf-8")
    (root / ".hidden").mkdir(exist_ok=True)
    (root / ".hidden" / "secret.txt").write_text("hiddenfile words\n", "utf-8")
    (root / ".dotfile.txt").write_text("hiddenfile too\n", "utf-8")

    (root / "corrupt.pdf").write_bytes(b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 9 0 R\ngarbage")
    (root / "corrupt.docx").write_bytes(b"PK\x03\x04 this is no zip archive")
    (root / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4)
    (root / "program.bin").write_bytes(bytes(range(256)) * 16)
    (root / "empty.txt").write_bytes(b"")
    (root / "blank.md").write_text("   \n\n\t\n", "utf-8")
    (root / "huge.txt").write_text("zebra " * (SMALL_CAP // 6 + 100), "utf-8")
    os.symlink("loop", root / "loop")
    os.symlink("missing-target.txt", root / "dangling")
    os.symlink("..", root / "nested" / "up")
    os.mkfifo(root / "pipe")
    return root
