"""The TUI with the real embedded models over a small folder: indexing, both iterations,
sources named by file. Slow (loads torch, MiniLM and SmolLM2)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from iterretgen_tui.commands.tui import make_session
from iterretgen_tui.config import Settings
from iterretgen_tui.ui.app import ChatApp
from iterretgen_tui.ui.iterations import IterationPane

from .test_ask_e2e import NOTES
from .test_tui import SIZE, answered, answers, ask, status_text
from .tui_support import pilot_test, wait_for

pytestmark = pytest.mark.slow


@pilot_test
async def test_real_models_answer_with_two_iterations_and_file_sources(tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    for name, text in NOTES.items():
        (folder / name).write_text(text, "utf-8")
    # Adaptive stop off: the tiny model must still show the second iteration.
    settings = replace(
        Settings(), llm="smollm2-135m", device="cpu", iterations=2, adaptive=False, top_k=2, max_tokens=48
    )
    app = ChatApp(settings, folder, make_session)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, app.ready.is_set, timeout=300)
        assert "passages" in status_text(app) and not app.unavailable
        await ask(pilot, "Where was the engineer who built the Eiffel Tower born?")
        await wait_for(pilot, lambda: answered(app), timeout=600)
        assert [p.border_title for p in app.query(IterationPane)] == ["Iteration 1", "Iteration 2"]
        final = answers(app)[-1].final
        assert final is not None and final.sources
        assert any(p.source.endswith((".md", ".txt")) for p in final.sources)
        assert "**[1]** " in answers(app)[-1].source
        assert "reached the maximum of 2 iterations" in status_text(app)
