"""Export a sentence-transformers model to ONNX once, into a cache folder keyed by its files.

Only the transformer is exported (torch.onnx.export); pooling and normalisation are
recorded in ``manifest.json`` and done in numpy by ``OnnxEmbedder``. The folder is
written beside its final name and renamed into place with the manifest written last, so
an interrupted export is never mistaken for a finished one.

BERT-family encoders (MiniLM, BGE, E5, GTE) are exported with eager attention, whose
pattern ONNX Runtime's transformer optimizer fuses into its attention, EmbedLayerNorm and
BiasGelu kernels, which int8 gains most from (docs/performance.md). The residual adds stay
Add + LayerNormalization: ONNX Runtime's SkipLayerNormalization kernel ran 4-5x slower.
"int8" then quantises the MatMul weights per output channel (per tensor drifted MiniLM's
vectors far from fp32's). "openvino-int8" leaves the graph unfused (OpenVINO reads
standard ONNX operators and fuses on its own) and quantises weights and activations
(engine/embedding/openvino_quantize.py) into an OpenVINO model, the fastest on a CPU.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import shutil
import tempfile
import warnings
from contextlib import contextmanager
from pathlib import Path

from ... import paths
from ..errors import IterRetGenError

EXPORT_VERSION = "3"  # bump when the exported graph or the manifest changes
VARIANTS = ("fp32", "int8", "openvino-int8")
# How quantised vectors are named in index identities: a new quantisation gets a new name,
# so its vectors never share an index with an older one's.
IDENTITIES = {"int8": "int8-fused-ln", "openvino-int8": "openvino-int8"}
_FUSABLE = {"bert"}  # config.model_type values ONNX Runtime's "bert" fusion recognises
MANIFEST = "manifest.json"
MODEL = "model.onnx"
OPENVINO_MODEL = "model.xml"  # with model.bin beside it
_SUPPORTED_MODULES = {"Transformer", "Pooling", "Normalize"}
_SUPPORTED_POOLING = ("mean", "cls")


class UnsupportedModel(IterRetGenError, ValueError):
    """The model has a layer the ONNX path does not reproduce; the torch backend runs it."""


def unsupported_reason(folder: Path) -> str | None:
    """Why ``folder`` cannot run on ONNX, judged from its config files alone (cheap)."""
    if not (folder / "tokenizer.json").exists():
        return "it has no fast tokenizer (tokenizer.json)"  # what the exported model reads with
    modules = folder / "modules.json"
    if not modules.exists():
        return None  # a bare Hugging Face encoder: sentence-transformers adds mean pooling
    for module in json.loads(modules.read_text("utf-8")):
        kind = module.get("type", "").rsplit(".", 1)[-1]
        if kind not in _SUPPORTED_MODULES:
            return f"it has a {kind} layer"
        if kind == "Pooling":
            mode = _pooling_mode(json.loads((folder / module["path"] / "config.json").read_text("utf-8")))
            if mode not in _SUPPORTED_POOLING:
                return f"it pools by {mode}"
    return None


def _pooling_mode(config: dict) -> str:
    if "pooling_mode" in config:
        return config["pooling_mode"]
    chosen = [
        k.removeprefix("pooling_mode_").removesuffix("_tokens").removesuffix("_token")
        for k, v in config.items()
        if k.startswith("pooling_mode_") and v is True
    ]
    return "+".join(chosen) or "mean"


def cache_folder(model: Path, variant: str) -> Path:
    """Where ``model``'s export lives: a changed file (a re-adapted encoder) gets a new one."""
    digest = hashlib.sha1(f"{EXPORT_VERSION}\0{variant}".encode())
    for file in sorted(p for p in model.rglob("*") if p.is_file()):
        stat = file.stat()
        digest.update(f"\0{file.relative_to(model)}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
    return paths.cache_dir() / "onnx" / f"{model.name}-{variant}-{digest.hexdigest()[:12]}"


def model_file(variant: str) -> str:
    return OPENVINO_MODEL if variant == "openvino-int8" else MODEL


def model_feed(encoded, names) -> dict:
    """The exported graph's int64 inputs from a tokenizer's numpy output; a tokenizer
    without token types gets zeros, as the encoder assumes."""
    import numpy as np

    ids = encoded["input_ids"]
    return {n: np.asarray(encoded[n], dtype=np.int64) if n in encoded else np.zeros(ids.shape, np.int64) for n in names}


def export(model: Path, target: Path, variant: str) -> None:
    """Write ``target`` (the model file, the tokenizer, manifest.json) from ``model``."""
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # stderr stays clean for --json runs
    if variant not in VARIANTS:
        raise ValueError(f"ONNX variant must be one of {', '.join(VARIANTS)}, not {variant!r}")
    reason = unsupported_reason(model)
    if reason:
        raise UnsupportedModel(f"{model.name} cannot run on ONNX: {reason}")
    st = SentenceTransformer(str(model), device="cpu", local_files_only=True)
    transformer = st[0]
    encoder = transformer.auto_model.eval()
    fusable = encoder.config.model_type in _FUSABLE and variant != "openvino-int8"
    if fusable:
        encoder.set_attn_implementation("eager")  # SDPA's exported pattern is not fused
    accepted = inspect.signature(encoder.forward).parameters
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in accepted]
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        exported = staging / "exported.onnx"
        _export_transformer(st, encoder, names, exported)
        graph = exported
        if fusable:
            graph = staging / "fused.onnx"
            _fuse(exported, graph, encoder.config)
        if variant == "int8":
            _quantize(graph, staging / MODEL)
        elif variant == "openvino-int8":
            from .openvino_quantize import quantize

            with _quiet():
                quantize(graph, staging / OPENVINO_MODEL, st.tokenizer, names, int(st.max_seq_length))
        else:
            graph.rename(staging / MODEL)
        for leftover in (exported, staging / "fused.onnx"):
            leftover.unlink(missing_ok=True)
        st.tokenizer.save_pretrained(str(staging))
        pooling = next((m for m in st if type(m).__name__ == "Pooling"), None)
        manifest = {
            "version": EXPORT_VERSION,
            "variant": variant,
            "inputs": names,
            "dim": int(st.get_embedding_dimension()),
            "max_seq_length": int(st.max_seq_length),
            "do_lower_case": bool(getattr(transformer, "do_lower_case", False)),
            "pooling": _pooling_mode(pooling.get_config_dict()) if pooling is not None else "mean",
            "fused": fusable,
        }
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2), "utf-8")
        shutil.rmtree(target, ignore_errors=True)  # a damaged earlier export
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _export_transformer(st, encoder, names: list[str], path: Path) -> None:
    """The transformer alone (pooling runs in numpy), with batch and length left dynamic."""
    import torch

    sample = st.tokenizer(["an example", "a second, longer example"], padding=True, return_tensors="pt")
    sample.setdefault("token_type_ids", torch.zeros_like(sample["input_ids"]))

    class LastHiddenState(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, *inputs):
            return self.encoder(**dict(zip(names, inputs))).last_hidden_state

    axes = {n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer and deprecation notes about the export itself
        torch.onnx.export(
            LastHiddenState(),
            tuple(sample[n] for n in names),
            str(path),
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )


def _fuse(source: Path, target: Path, config) -> None:
    from onnxruntime.transformers import optimizer
    from onnxruntime.transformers.fusion_options import FusionOptions

    options = FusionOptions("bert")
    # The tanh GELU is faster but cost int8 answer recall (docs/performance.md).
    options.enable_gelu_approximation = False
    options.use_multi_head_attention = True  # its projections stay MatMuls, which int8 quantises
    # Its CPU kernel took 920 us where Add + LayerNormalization took 180-220 (a 4x100x384
    # batch, ONNX Runtime 1.32, AVX2): 9% of the int8 encoder's time (docs/performance.md).
    # The sessions keep ONNX Runtime from fusing them back (onnx_embedder.UNFUSED).
    options.enable_skip_layer_norm = False
    with _quiet():
        model = optimizer.optimize_model(
            str(source),
            model_type="bert",
            num_heads=config.num_attention_heads,
            hidden_size=config.hidden_size,
            opt_level=0,
            optimization_options=options,
        )
    model.save_model_to_file(str(target))


def _quantize(source: Path, target: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with _quiet():
        quantize_dynamic(
            str(source),
            str(target),
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
            # The exported graph leaves some MatMul outputs untyped; they are all float.
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )


@contextmanager
def _quiet():
    """ONNX Runtime's tools log their advice to the root logger, i.e. to the user."""
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(logging.NOTSET)
