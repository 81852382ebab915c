"""Quantise an exported ONNX encoder to int8 for OpenVINO: weights and activations (NNCF).

Activations need calibration: their ranges are measured on sample texts. The samples are
paragraphs of Python's own reference documentation (``pydoc_data``, in every CPython), so
the quantised model does not depend on the folder being indexed and ships with nothing.
NNCF's transformer preset (SmoothQuant, fast bias correction) keeps MiniLM's scifact
nDCG@10 within a point of fp32, where a plain min/max static quantisation of the same
MatMuls drifted to a mean cosine of 0.94 (docs/performance.md).
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Sequence
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

CALIBRATION_SAMPLES = 300
# Lengths cycle through these (characters), so short and truncated-long texts are both seen.
_SAMPLE_LENGTHS = (300, 700, 1200, 1800)


def calibration_texts(count: int = CALIBRATION_SAMPLES) -> list[str]:
    """``count`` deterministic English passages built from pydoc's topic texts."""
    from pydoc_data.topics import topics

    texts, current = [], ""
    for key in sorted(topics):
        for paragraph in re.split(r"\n\s*\n", topics[key]):
            paragraph = " ".join(paragraph.split())
            if len(paragraph) <= 80:  # headings and code fragments
                continue
            current = f"{current} {paragraph}".strip()
            if len(current) >= _SAMPLE_LENGTHS[len(texts) % len(_SAMPLE_LENGTHS)]:
                texts.append(current)
                current = ""
                if len(texts) == count:
                    return texts
    return texts


def import_nncf():
    """nncf, with its telemetry off. NNCF reports usage to Google Analytics unless the user
    opted out machine-wide, and this tool promises that nothing leaves the machine. NNCF_CI
    is NNCF's own off switch, read when nncf is first imported."""
    os.environ.setdefault("NNCF_CI", "1")
    import nncf

    return nncf


def quantize(source: Path, target: Path, tokenizer, inputs: Sequence[str], max_length: int) -> None:
    """Write ``target`` (an OpenVINO .xml with its .bin) from the fp32 ONNX ``source``."""
    import openvino as ov

    from .onnx_export import model_feed

    nncf = import_nncf()
    samples = [
        model_feed(tokenizer([text], truncation=True, max_length=max_length, return_tensors="np"), inputs)
        for text in calibration_texts()
    ]
    # read_model, not convert_model: the converter sends telemetry of its own.
    model = ov.Core().read_model(str(source))
    # NNCF draws progress bars on stdout, which carries --json output and the TUI's screen.
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        quantized = nncf.quantize(
            model,
            nncf.Dataset(samples),
            model_type=nncf.ModelType.TRANSFORMER,
            preset=nncf.QuantizationPreset.MIXED,
            subset_size=len(samples),
        )
    ov.save_model(quantized, str(target))
