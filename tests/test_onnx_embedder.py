"""The exported embedders (ONNX Runtime, OpenVINO) against the torch one, on the real embedded MiniLM."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from iterretgen_tui import config, models, paths
from iterretgen_tui.engine.embedding import onnx_embedder, onnx_export, openvino_quantize
from iterretgen_tui.engine.embedding.backends import fixed_backend
from iterretgen_tui.engine.embedding.embedder import SentenceEmbedder
from iterretgen_tui.engine.embedding.onnx_embedder import OnnxEmbedder
from iterretgen_tui.engine.indexing.indexer import open_folder_index
from iterretgen_tui.session import Session

pytestmark = pytest.mark.slow

TEXTS = [
    "  Gustave Eiffel was born in Dijon.  ",  # sentence-transformers strips the ends
    "The tower is in Paris",
    "x",
    "Mitochondria " * 400,  # past max_seq_length: truncated alike
    "Café Zoë: naïve crème brûlée, 東京, ÅNGSTRÖM",  # accents, case, CJK: the tokenizer's own rules
]


@pytest.fixture(scope="module")
def minilm():
    return models.resolve_embedder(models.EMBEDDED_EMBEDDER)


@pytest.fixture(scope="module")
def torch_vectors(minilm):
    embedder = SentenceEmbedder(minilm, device="cpu", name="all-minilm-l6-v2")
    return embedder, embedder.embed_batch(TEXTS)


def test_fp32_vectors_match_torch_and_share_its_index(minilm, torch_vectors):
    reference, expected = torch_vectors
    embedder = OnnxEmbedder(minilm, name="all-minilm-l6-v2")
    vectors = embedder.embed_batch(TEXTS)
    assert vectors.shape == expected.shape and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, expected, atol=2e-5)
    np.testing.assert_allclose(embedder.embed_query(TEXTS[1]), expected[1], atol=2e-5)
    # batching by length must not reorder the rows
    np.testing.assert_allclose(OnnxEmbedder(minilm, batch_size=2).embed_batch(TEXTS[::-1]), expected[::-1], atol=2e-5)
    assert embedder.embed_batch([]).shape == (0, 384)
    assert embedder.identity == reference.identity


def test_two_streams_keep_rows_in_place_and_raise_what_a_session_raises(minilm, torch_vectors):
    embedder = OnnxEmbedder(minilm, name="all-minilm-l6-v2", batch_size=1, threads=2)
    runtime = embedder._model.runtime
    assert len(runtime.sessions) == 2 and embedder.texts_in_flight == 2  # what a calibration round must fill
    np.testing.assert_allclose(embedder.embed_batch(TEXTS[::-1]), torch_vectors[1][::-1], atol=2e-5)

    class Broken:
        def run(self, *args):
            raise RuntimeError("session failed")

    runtime.sessions[1] = Broken()  # the stream in the pool's thread
    with pytest.raises(RuntimeError, match="session failed"):
        embedder.embed_batch(TEXTS * 4)


def test_lengths_padded_to_a_multiple_give_the_same_vectors(minilm, torch_vectors, monkeypatch):
    # OpenVINO pads to a multiple of 16 where it runs at bf16; the mask must keep pads out.
    monkeypatch.setattr(onnx_embedder._OnnxRuntime, "pad_multiple", 16)
    widths = []
    padded = onnx_embedder._padded

    def recorded(*args):
        batch = padded(*args)
        widths.append(batch["input_ids"].shape[1])
        return batch

    monkeypatch.setattr(onnx_embedder, "_padded", recorded)
    embedder = OnnxEmbedder(minilm, name="all-minilm-l6-v2", batch_size=2)
    np.testing.assert_allclose(embedder.embed_batch(TEXTS), torch_vectors[1], atol=2e-5)
    assert widths and all(width % 16 == 0 for width in widths)


@pytest.mark.parametrize("variant", ["int8", "openvino-int8"])
def test_int8_drifts_a_little_and_gets_its_own_index(minilm, torch_vectors, tmp_path, variant):
    reference, expected = torch_vectors
    int8 = OnnxEmbedder(minilm, variant=variant, name="all-minilm-l6-v2")
    vectors = int8.embed_batch(TEXTS * 5)  # several batches in flight at once on OpenVINO
    cosine = vectors @ expected.T
    # Each row is nearest its own text's fp32 vector (rows stay in place), a little off it:
    # the word repeated 400 times is the worst case (0.95 on OpenVINO, over 0.98 on real text).
    assert (cosine.argmax(axis=1) == np.tile(np.arange(len(TEXTS)), 5)).all()
    own = cosine.max(axis=1)
    assert own.min() > 0.94 and own.mean() > 0.97 and not np.allclose(own, 1, atol=1e-4)
    assert int8.embed_query(TEXTS[1]) @ expected[1] > 0.97
    assert int8.identity != reference.identity and int8.identity.endswith(onnx_export.IDENTITIES[variant])
    fp32_index, int8_index = open_folder_index(tmp_path, reference), open_folder_index(tmp_path, int8)
    assert fp32_index.directory != int8_index.directory
    fp32_index.close(), int8_index.close()


def test_openvino_int8_quantises_activations_too(minilm):
    """Its speed comes from int8 activations (FakeQuantize before the MatMuls), calibrated
    on pydoc's texts, which every CPython ships."""
    import openvino as ov

    OnnxEmbedder(minilm, variant="openvino-int8")
    folder = onnx_export.cache_folder(minilm, "openvino-int8")
    ops = [op.get_type_name() for op in ov.Core().read_model(str(folder / onnx_export.OPENVINO_MODEL)).get_ops()]
    assert ops.count("FakeQuantize") >= 36  # at least the 6 layers' six projection MatMuls
    texts = openvino_quantize.calibration_texts()
    assert len(texts) == openvino_quantize.CALIBRATION_SAMPLES and texts == openvino_quantize.calibration_texts()
    assert min(map(len, texts)) >= 300 and max(map(len, texts)) >= 1800


def test_nncf_sends_no_telemetry():
    """Outside pytest (which NNCF detects and goes quiet for) and outside CI."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("NNCF_CI", "NNCF_DEV", "CI")}
    code = (
        "from iterretgen_tui.engine.embedding.openvino_quantize import import_nncf; import_nncf(); "
        "from nncf.telemetry import wrapper; print(isinstance(wrapper.telemetry, wrapper.NNCFTelemetryStub))"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True"


def test_bert_attention_is_fused_into_onnx_runtime_kernels(minilm):
    """The speed of the ONNX path rests on this fusion (docs/performance.md): a change in
    the exported graph that the optimizer no longer recognises must fail here, not only
    show in a benchmark."""
    import onnx

    for variant in ("fp32", "int8"):
        OnnxEmbedder(minilm, variant=variant)
        folder = onnx_export.cache_folder(minilm, variant)
        ops = {node.op_type for node in onnx.load(str(folder / onnx_export.MODEL)).graph.node}
        assert {"MultiHeadAttention", "EmbedLayerNormalization", "LayerNormalization"} <= ops, variant
        assert "SkipLayerNormalization" not in ops, variant  # its kernel is the slow one
        assert json.loads((folder / onnx_export.MANIFEST).read_text())["fused"]
        if variant == "int8":
            assert "MatMulInteger" in ops  # quantised weights


def test_sessions_do_not_fuse_the_layer_norms_back(minilm, tmp_path):
    import onnx
    import onnxruntime as ort

    model = onnx_export.cache_folder(minilm, "int8") / onnx_export.MODEL
    OnnxEmbedder(minilm, variant="int8")
    kernels = {}
    for name, disabled in (("ours", onnx_embedder.UNFUSED), ("default", [])):
        options = ort.SessionOptions()
        options.optimized_model_filepath = str(tmp_path / f"{name}.onnx")
        ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"], disabled_optimizers=disabled)
        kernels[name] = {node.op_type for node in onnx.load(options.optimized_model_filepath).graph.node}
    assert "SkipLayerNormalization" not in kernels["ours"]
    assert "SkipLayerNormalization" in kernels["default"]  # what UNFUSED prevents


def test_a_damaged_or_missing_export_is_made_again(minilm, tmp_path):
    (paths.cache_dir() / "onnx").unlink()  # this test's own cache, not the shared one
    messages = []
    OnnxEmbedder(minilm, name="all-minilm-l6-v2", status=messages.append)
    assert messages and "preparing the fp32 export of all-minilm-l6-v2" in messages[0]
    folder = onnx_export.cache_folder(minilm, "fp32")
    assert json.loads((folder / onnx_export.MANIFEST).read_text())["max_seq_length"] == 256

    (folder / onnx_export.MODEL).write_bytes(b"not a model")
    messages.clear()
    vectors = OnnxEmbedder(minilm, status=messages.append).embed_batch(TEXTS[:2])
    assert any("damaged" in m for m in messages) and np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)

    messages.clear()
    OnnxEmbedder(minilm, status=messages.append)
    assert messages == []  # the repaired export is reused

    copy = shutil.copytree(minilm, tmp_path / "minilm")
    before = onnx_export.cache_folder(copy, "fp32")
    (copy / "modules.json").write_text((copy / "modules.json").read_text() + "\n")
    assert onnx_export.cache_folder(copy, "fp32") != before  # an edited (re-adapted) model is exported anew


def test_auto_measures_on_a_cpu_and_takes_torch_for_models_it_cannot_reproduce(minilm, tmp_path):
    assert fixed_backend("auto", "cpu", [minilm]) is None  # measured (tests/test_calibration.py)
    assert fixed_backend("torch", "cpu", [minilm]) == "torch"
    assert fixed_backend("onnx-int8", "cpu", [minilm]) == "onnx-int8"
    dense = shutil.copytree(minilm, tmp_path / "dense")
    modules = json.loads((dense / "modules.json").read_text())
    modules.append({"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers.models.Dense"})
    (dense / "modules.json").write_text(json.dumps(modules))
    assert "Dense" in onnx_export.unsupported_reason(dense)
    assert fixed_backend("auto", "cpu", [minilm, dense]) == "torch"
    with pytest.raises(onnx_export.UnsupportedModel):
        onnx_export.export(dense, tmp_path / "out", "fp32")


def test_the_setting_picks_the_backend():
    for backend, variant in (("onnx-int8", "int8"), ("openvino-int8", "openvino-int8")):
        session = Session(config.Settings(device="cpu", embed_backend=backend))
        session.load_embedder()
        assert isinstance(session.embedder, OnnxEmbedder) and session.embedder.variant == variant
    session = Session(config.Settings(device="cpu", embed_backend="torch"))
    session.load_embedder()
    assert isinstance(session.embedder, SentenceEmbedder)
    with pytest.raises(config.ConfigError, match="embed_backend must be one of"):
        config.Settings(embed_backend="tpu").validated()
