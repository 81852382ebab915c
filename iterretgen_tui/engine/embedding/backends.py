"""The ways the embedder can run, by setting name; light, so settings import it cheaply."""

# Backend setting -> export variant (engine/embedding/onnx_export.py VARIANTS).
BACKEND_VARIANTS = {"onnx": "fp32", "onnx-int8": "int8", "openvino-int8": "openvino-int8"}
EMBED_BACKENDS = ("auto", "torch", *BACKEND_VARIANTS)
