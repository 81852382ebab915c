"""OCR of scanned PDF pages and image files: read, cited, counted, cancelled, never redone,
and bad input refused with a reason. Pages are drawn here with Pillow from known text."""

from __future__ import annotations

import io
import math
import os
import threading
import time
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont
from pypdf import PdfReader, PdfWriter

from iterretgen_tui.config import ConfigError, Settings
from iterretgen_tui.engine.indexing import indexer, ocr
from iterretgen_tui.engine.indexing.indexer import open_folder_index, sync_folder
from iterretgen_tui.engine.retrieval.retriever import Retriever

from . import docfolder
from .fakes import HashEmbedder


def page(lines: list[str], size: tuple[int, int] = (1240, 500), font_size: int = 40) -> Image.Image:
    """A white page with black text lines, as a 150-dpi scan of a short note would look."""
    image = Image.new("L", size, 255)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=font_size)
    for n, line in enumerate(lines):
        draw.text((60, 60 + int(n * font_size * 1.8)), line, fill=0, font=font)
    return image


def scanned_pdf(pages: list[Image.Image]) -> bytes:
    """A PDF of page images only, no text layer: what a scanner writes."""
    out = io.BytesIO()
    pages[0].save(out, "PDF", resolution=150, save_all=True, append_images=pages[1:])
    return out.getvalue()


@pytest.fixture
def emb() -> HashEmbedder:
    return HashEmbedder()


@pytest.fixture
def reads(monkeypatch) -> list[int]:
    """Counts the pages that reach the OCR engine (blank ones never do)."""
    calls: list[int] = []
    real = ocr.read_lines

    def counted(gray, script=None):
        calls.append(1)
        return real(gray, script)

    monkeypatch.setattr(ocr, "read_lines", counted)
    return calls


def sync(folder: Path, embedder, **kwargs):
    index = open_folder_index(folder, embedder)
    return index, sync_folder(folder, index, embedder, **kwargs)


def top(index, embedder, question: str):
    return Retriever(embedder, index).retrieve(question, 1)[0]


def skipped(report, folder: Path) -> dict[str, str]:
    return {str(Path(s.path).relative_to(folder)): s.reason for s in report.skipped}


# -- reading order and blank pages ---------------------------------------------------------


def test_reading_order_straightens_a_tilted_page_and_orders_each_line():
    tilt = math.radians(2.5)

    def box(x, y, w=300, h=30):  # a box at (x, y) of a page turned by `tilt`
        corners = np.array([[x, y], [x + w, y], [x + w, y + h], [x, y + h]], dtype=np.float32)
        turn = np.array([[math.cos(tilt), -math.sin(tilt)], [math.sin(tilt), math.cos(tilt)]])
        return corners @ turn.T

    # Two lines, each read as two pieces; the tilt puts the right piece of line one as
    # low as the left piece of line two, and the input order is shuffled.
    pieces = [(box(900, 100), "beta"), (box(100, 160), "gamma"), (box(100, 100), "alpha"), (box(900, 160), "delta")]
    assert ocr.reading_order([b for b, _ in pieces], [t for _, t in pieces]) == ["alpha beta", "gamma delta"]


def test_blank_pages_are_told_from_pages_with_ink():
    rng = np.random.default_rng(0)
    noisy_paper = np.clip(rng.normal(245, 12, (800, 600)), 0, 255).astype(np.uint8)
    noisy_paper[rng.random((800, 600)) < 0.001] = 0  # scanner specks
    assert ocr.is_blank(noisy_paper)
    assert not ocr.is_blank(np.asarray(page(["3"], size=(600, 800))))


def test_forced_f32_runs_at_f32_and_reads_what_the_default_precision_reads(monkeypatch):
    # The default lets OpenVINO pick bf16 where the CPU computes it natively; the text must not change.
    gray = np.asarray(page(["Invoice 4471 from Whitfield", "paid on the 14th of April"]))
    default = ocr.read_lines(gray)
    monkeypatch.setattr(ocr, "PRECISION", "f32")
    ocr._engine.cache_clear()
    try:
        assert ocr._engine().text_rec.session.precision == "f32"
        assert ocr.read_lines(gray) == default == ["Invoice 4471 from Whitfield", "paid on the 14th of April"]
    finally:
        ocr._engine.cache_clear()  # the next test builds the default engine again


def test_the_detector_sees_a_large_page_at_the_detection_side_and_still_reads_it(monkeypatch):
    # RapidOCR picks its own detection scale for large pages unless the engine sets it.
    gray = np.asarray(
        page(["Invoice 4471 from Whitfield", "paid on the 14th of April"], size=(1654, 2338), font_size=44)
    )
    detector = ocr._engine().text_det.infer
    shapes = []

    def seen(batch):
        shapes.append(batch.shape)
        return detector(batch)

    monkeypatch.setattr(ocr._engine().text_det, "infer", seen)
    assert ocr.read_lines(gray) == ["Invoice 4471 from Whitfield", "paid on the 14th of April"]
    assert max(shapes[0][2:]) == ocr.DETECT_SIDE


# -- the recogniser's two output layers ----------------------------------------------------

ENGLISH = [
    "Invoice 4471 from Whitfield and Sons",
    "paid on the 14th of April by cheque",
    "The harbour accounts were checked twice",
    "against the ledger kept by the clerk",
]
# Kanji words the recogniser's alphabet holds, drawn in IPAex Gothic (a test dependency)
KANJI = ["中国", "大学", "銀行", "病院"]


@pytest.fixture
def layers(monkeypatch) -> dict[str, int]:
    """Counts the batches each output layer reads; FULL_READ_LINES small so that short pages
    reach the short layer."""
    monkeypatch.setattr(ocr, "FULL_READ_LINES", 4)
    recogniser = ocr._engine().text_rec.session
    counts = {"full": 0, "short": 0}
    for name in counts:
        model = getattr(recogniser, name)

        def counted(batch, name=name, model=model):
            counts[name] += 1
            return model(batch)

        monkeypatch.setattr(recogniser, name, counted)
    return counts


def full_read(monkeypatch, pages: list[np.ndarray]) -> list[list[str]]:
    """The pages read with every label on every line, as before the short layer."""
    with monkeypatch.context() as patch:
        patch.setattr(ocr, "FULL_READ_LINES", 10**9)
        return ocr.OcrRun().read([lambda p=p: p for p in pages])


def kanji_page(lines: list[str]) -> np.ndarray:
    """Lines drawn in a Japanese font, which draws Latin letters too."""
    from importlib.util import find_spec

    font_file = Path(next(iter(find_spec("matplotlib_fontja").submodule_search_locations))) / "fonts" / "ipaexg.ttf"
    font = ImageFont.truetype(str(font_file), 40)
    image = Image.new("L", (1600, 120 + 72 * len(lines)), 255)
    draw = ImageDraw.Draw(image)
    for n, line in enumerate(lines):
        draw.text((60, 60 + 72 * n), line, fill=0, font=font)
    return np.asarray(image)


def test_a_latin_file_is_read_by_the_short_layer_after_its_first_lines_with_the_same_text(monkeypatch, layers):
    pages = [np.asarray(page(ENGLISH, size=(1240, 400))), np.asarray(page(ENGLISH[::-1], size=(1240, 400)))]
    assert (
        ocr.OcrRun().read([lambda p=p: p for p in pages]) == full_read(monkeypatch, pages) == [ENGLISH, ENGLISH[::-1]]
    )
    assert layers["short"] >= 1  # page 2, after page 1's four lines were read in full


def test_cjk_in_a_file_keeps_every_label_and_pages_read_short_before_it_are_read_again(monkeypatch, layers):
    japanese = kanji_page(["中国大学", "東京銀行本店", "病院"])
    pages = [japanese, np.asarray(page(ENGLISH, size=(1240, 400)))]
    read = ocr.OcrRun().read([lambda p=p: p for p in pages])
    assert read == full_read(monkeypatch, pages) and read[0][:2] == ["中国大学", "東京銀行本店"]
    assert layers["short"] == 0  # CJK in the first lines: never the short layer

    # After a page of English alone, kanji among English lines: the short layer drops them,
    # its confidence hardly falling, but leaves their ink without a label; that line is read
    # with every label, finds kanji, and every page read short so far is read again.
    sneaky = kanji_page(["The harbour accounts were checked against the 銀行 ledger"])
    mixed = kanji_page([f"{line} {word}" for line, word in zip(ENGLISH, KANJI)])
    english = [np.asarray(page(ENGLISH, size=(1240, 400))), np.asarray(page(ENGLISH[::-1], size=(1240, 400)))]
    pages = [*english, sneaky, mixed]
    monkeypatch.setattr(ocr, "FULL_READ_EVERY", 10**9)  # the ink alone, not page 4's full batch
    layers.update(full=0, short=0)
    run = ocr.OcrRun()
    read = run.read([lambda p=p: p for p in pages])
    assert read == full_read(monkeypatch, pages)
    assert (run.pages_done, run.pages_left) == (6, 0)  # pages 2 and 3 read twice, and counted
    assert "銀行" in read[2][0] and all(word in line for word, line in zip(KANJI, read[3]))
    assert layers["short"] == 2  # pages 2 and 3; page 4 follows the kanji found

    # Without the unread ink to go by, every FULL_READ_EVERY-th batch is read in full, and
    # finds them.
    monkeypatch.setattr(ocr, "GAP_STEPS", 10**9)
    monkeypatch.setattr(ocr, "FULL_READ_EVERY", 3)
    pages = [english[0], sneaky, sneaky]  # one batch a page
    read = ocr.OcrRun().read([lambda p=p: p for p in pages])
    assert read == full_read(monkeypatch, pages) and "銀行" in read[1][0] and "銀行" in read[2][0]


# -- formats -------------------------------------------------------------------------------


def test_a_png_is_read_and_retrieved_with_its_lines_marked_as_ocr(tmp_path, emb):
    folder = tmp_path / "docs"
    folder.mkdir()
    page(["The zebrafish laboratory", "opens at nine every Monday"]).save(folder / "note.png")
    (folder / "other.txt").write_text("Penguins live in the south.\n", "utf-8")
    index, report = sync(folder, emb)
    assert report.added == 2 and not report.skipped and report.ocr_pages == 1
    found = top(index, emb, "When does the zebrafish laboratory open?")
    assert found.source == str(folder / "note.png")
    assert found.location == "lines 1-2, OCR"
    assert found.text.splitlines() == ["The zebrafish laboratory", "opens at nine every Monday"]


def test_a_scanned_pdf_is_read_and_its_passages_cite_their_page(tmp_path, emb):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "scan.pdf").write_bytes(
        scanned_pdf([page(["Minutes of the garden club"]), page(["The greenhouse key", "hangs behind the blue door"])])
    )
    index, report = sync(folder, emb)
    assert report.added == 1 and report.ocr_pages == 2
    found = top(index, emb, "Where is the greenhouse key?")
    assert (found.source, found.location) == (str(folder / "scan.pdf"), "p. 2, OCR")
    assert "blue door" in found.text


def test_a_tiff_with_several_frames_is_read_page_by_page(tmp_path, emb):
    folder = tmp_path / "docs"
    folder.mkdir()
    first, second = page(["Invoice number seven"]), page(["Total due: forty euros"])
    first.save(folder / "fax.tiff", save_all=True, append_images=[second])
    index, _ = sync(folder, emb)
    assert top(index, emb, "total due euros").location == "p. 2, OCR"


def test_pages_with_a_text_layer_are_not_ocred(tmp_path, emb, reads):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "paper.pdf").write_bytes(docfolder.pdf_bytes([["Introduction", "The camel is large."]]))
    index, report = sync(folder, emb)
    assert report.added == 1 and report.ocr_pages == 0 and reads == []
    assert top(index, emb, "camel").location == "p. 1"


def test_a_pdf_mixing_text_pages_and_scanned_pages_ocrs_only_the_scans(tmp_path, emb, reads):
    writer = PdfWriter()
    writer.add_page(PdfReader(io.BytesIO(docfolder.pdf_bytes([["The camel is large and patient."]]))).pages[0])
    writer.add_page(PdfReader(io.BytesIO(scanned_pdf([page(["The walrus sleeps on ice"])]))).pages[0])
    folder = tmp_path / "docs"
    folder.mkdir()
    writer.write(folder / "mixed.pdf")
    index, report = sync(folder, emb)
    assert report.ocr_pages == 1 and len(reads) == 1
    assert top(index, emb, "camel").location == "p. 1"
    assert top(index, emb, "walrus sleeps").location == "p. 2, OCR"


# -- incremental, progress, cancel ---------------------------------------------------------


def test_an_unchanged_file_is_never_ocred_twice(tmp_path, emb, reads):
    folder = tmp_path / "docs"
    folder.mkdir()
    scan = folder / "scan.pdf"
    scan.write_bytes(scanned_pdf([page(["A first page of text"]), page(["A second page of text"])]))
    index, report = sync(folder, emb)
    assert len(reads) == report.ocr_pages == 2
    again = sync_folder(folder, index, emb)
    assert (again.unchanged, again.ocr_pages) == (1, 0)
    stat = scan.stat()
    os.utime(scan, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # touched: new stat, same content
    touched = sync_folder(folder, index, emb)
    assert touched.ocr_pages == 0 and len(reads) == 2, "the content hash decides, not the stat"
    assert not touched.skipped and len(index) == 2


def test_progress_counts_pages_and_a_cancel_stops_between_pages(tmp_path, emb):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "scan.pdf").write_bytes(scanned_pdf([page([f"Page number {n} of the scan"]) for n in range(1, 4)]))
    cancel = threading.Event()
    seen = []

    def progress(p):
        seen.append((p.ocr_pages_done, p.ocr_pages_left))
        if p.ocr_pages_done == 1:
            cancel.set()

    index, report = sync(folder, emb, cancel=cancel, progress=progress)
    assert report.cancelled and report.ocr_pages == 1
    assert (
        (0, 3) in seen
        and (1, 2) in seen
        and "1 pages OCR'd, 2 to go in this file"
        in [indexer.IndexProgress(0, 1, 0, 0.0, None, "", d, left).ocr_note for d, left in seen]
    )
    assert index.files() == {} and len(index) == 0, "a file cut short is not kept"
    seen.clear()
    report = sync_folder(folder, index, emb, progress=progress)
    assert report.added == 1 and report.ocr_pages == 3 and (3, 0) in seen
    assert sorted(top(index, emb, f"page number {n}").location for n in (1, 2, 3)) == [
        "p. 1, OCR",
        "p. 2, OCR",
        "p. 3, OCR",
    ]


def test_the_next_page_loads_while_one_is_read_one_loader_at_a_time_and_a_cancel_waits_for_it(monkeypatch):
    started: dict[int, threading.Event] = {}
    running, overlaps, loader_threads = [], [], set()

    def loaders(count):
        started.clear()
        started.update({n: threading.Event() for n in range(1, count + 1)})

        def loader(n):
            def load():
                loader_threads.add(threading.get_ident())
                running.append(n)
                overlaps.append(len(running))
                started[n].set()
                time.sleep(0.05)
                running.remove(n)
                return None if n == 3 else np.full((4, 4), n, dtype=np.uint8)  # page 3 is blank

            return load

        return [loader(n) for n in range(1, count + 1)]

    def read_page(gray, _script):
        n = int(gray[0, 0])
        assert started[n + 1].wait(5), f"page {n + 1} was not loading while page {n} was read"
        return [f"page {n}"]

    monkeypatch.setattr(ocr, "read_lines", read_page)
    assert ocr.OcrRun().read(loaders(3)) == [["page 1"], ["page 2"], []]
    assert max(overlaps) == 1 and len(loader_threads) == 1 and threading.get_ident() not in loader_threads

    cancel = threading.Event()
    run = ocr.OcrRun(cancel, on_page=lambda: run.pages_done == 1 and cancel.set())
    with pytest.raises(ocr.OcrCancelled):
        run.read(loaders(4))
    assert run.pages_done == 1 and started[2].is_set() and not running, "the load in flight ended first"
    assert not started[3].is_set() and not started[4].is_set()


def test_a_first_run_cut_short_does_not_make_the_next_one_ocr_again(tmp_path, emb, reads, monkeypatch):
    monkeypatch.setattr(indexer, "BATCH_SECONDS", 0.0)  # commit after every file
    folder = tmp_path / "docs"
    folder.mkdir()
    page(["The first note"]).save(folder / "a.png")
    page(["The second note"]).save(folder / "b.png")
    cancel = threading.Event()
    index, report = sync(folder, emb, cancel=cancel, progress=lambda p: p.files_done == 1 and cancel.set())
    assert report.cancelled and list(index.files()) == [str(folder / "a.png")] and len(reads) == 1
    report = sync_folder(folder, index, emb)
    assert (report.unchanged, report.added, report.ocr_pages) == (1, 1, 1) and len(reads) == 2


def test_ocr_off_skips_images_with_a_reason_and_turning_it_on_reads_only_pdfs_and_images(tmp_path, emb, monkeypatch):
    folder = tmp_path / "docs"
    folder.mkdir()
    page(["The heron nests by the lake"]).save(folder / "photo.jpg")
    (folder / "scan.pdf").write_bytes(scanned_pdf([page(["The otter swims at dusk"])]))
    (folder / "notes.txt").write_text("Plain notes about badgers.\n", "utf-8")
    index, report = sync(folder, emb, ocr="off")
    assert skipped(report, folder) == {
        "photo.jpg": 'image: OCR is off (set ocr = "auto" to read images)',
        "scan.pdf": "no text found (a scanned PDF? OCR is off)",
    }
    assert indexer.needs_sync(folder, index, ocr="auto") and not indexer.needs_sync(folder, index, ocr="off")
    read_paths = []
    real_read = indexer.read
    monkeypatch.setattr(indexer, "read", lambda entry, cap: read_paths.append(entry.path.name) or real_read(entry, cap))
    report = sync_folder(folder, index, emb, ocr="auto")
    assert sorted(read_paths) == ["photo.jpg", "scan.pdf"], "text files are not read again"
    assert not report.skipped and report.ocr_pages == 2
    assert top(index, emb, "heron nests").source == str(folder / "photo.jpg")


def test_the_setting_is_validated():
    assert Settings(ocr="off").validated().ocr == "off"
    with pytest.raises(ConfigError, match="ocr must be one of auto, off"):
        Settings(ocr="maybe").validated()


# -- bad input -----------------------------------------------------------------------------


def huge_png(width: int, height: int) -> bytes:
    """A valid white 1-bit PNG of any size, written row by row (the pixels never exist)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return len(body).to_bytes(4, "big") + kind + body + zlib.crc32(kind + body).to_bytes(4, "big")

    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([1, 0, 0, 0, 0])
    pack = zlib.compressobj(1)
    row = b"\0" + b"\xff" * ((width + 7) // 8)
    body = b"".join(pack.compress(row) for _ in range(height)) + pack.flush()
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", body) + chunk(b"IEND", b"")


def encrypted_pdf() -> bytes:
    writer = PdfWriter()
    writer.add_page(PdfReader(io.BytesIO(scanned_pdf([page(["Secret"])]))).pages[0])
    writer.encrypt("a password", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def blank_pdf(pages: int) -> bytes:
    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(595, 842)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_bad_images_and_pdfs_are_skipped_with_a_reason_and_nothing_else_is_lost(tmp_path, emb, reads):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.txt").write_text("The good file mentions a lynx.\n", "utf-8")
    page(["The kept page mentions a marmot"]).save(folder / "kept.png")
    index, _ = sync(folder, emb)
    reads.clear()

    good = io.BytesIO()
    page(["Cut short"]).save(good, "JPEG")
    (folder / "truncated.jpg").write_bytes(good.getvalue()[: len(good.getvalue()) // 2])
    (folder / "corrupt.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"not really a picture" * 20)
    (folder / "bomb.png").write_bytes(huge_png(20_000, 20_000))
    (folder / "large.png").write_bytes(huge_png(10_000, 10_000))
    (folder / "locked.pdf").write_bytes(encrypted_pdf())
    (folder / "blank.pdf").write_bytes(blank_pdf(500))
    (folder / "white.pdf").write_bytes(scanned_pdf([Image.new("L", (1240, 1754), 255)] * 3))
    started = time.monotonic()
    report = sync_folder(folder, index, emb)
    seconds = time.monotonic() - started

    reasons = skipped(report, folder)
    assert reasons["truncated.jpg"].startswith("cannot read image: OSError")
    assert reasons["corrupt.png"].startswith("cannot read image")
    assert reasons["bomb.png"] == "image too large: over 179 megapixels"
    assert reasons["large.png"] == "image too large: 10000 x 10000 pixels (the limit is 89 megapixels)"
    assert reasons["locked.pdf"] == "encrypted PDF (password protected)"
    assert reasons["blank.pdf"] == reasons["white.pdf"] == "no text found (blank pages, or OCR found no text)"
    assert len(reasons) == 7
    assert reads == [], "blank pages are found blank before OCR"
    assert seconds < 60, "500 blank pages take bounded time"
    assert (report.unchanged, report.indexed) == (2, 2)
    assert top(index, emb, "lynx").source == str(folder / "good.txt")
    assert top(index, emb, "marmot").source == str(folder / "kept.png")
