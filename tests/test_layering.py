"""The engine is usable without the UI: no module under engine/ imports textual."""

import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[1] / "iterretgen_tui" / "engine"


def test_engine_never_imports_textual():
    offenders = []
    for path in ENGINE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] == "textual"]
    assert offenders == []
    assert len(list(ENGINE.rglob("*.py"))) >= 8  # the engine lives in subpackages
