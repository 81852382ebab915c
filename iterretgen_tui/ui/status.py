"""The status line: models, device, index size, a pull of the default reader, what is
happening, how the last answer went."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import ProgressBar, Static

from ..engine.counting import counted
from ..models import upgrade_hint

if TYPE_CHECKING:
    from ..engine.indexing.indexer import IndexProgress


class StatusLine(Horizontal):
    def __init__(self, llm: str, embedder: str, device: str) -> None:
        super().__init__(id="status")
        self.facts = {"llm": llm, "embedder": embedder, "device": device, "passages": None}
        self.activity = ""
        self.pull = ""  # the app's pull of the default reader: how far, or how it ended

    def compose(self) -> ComposeResult:
        yield Static(id="status-text", markup=False)
        yield ProgressBar(id="index-progress", show_eta=True)

    def on_mount(self) -> None:
        self.query_one(ProgressBar).display = False
        self._show()

    def set_info(self, info: dict) -> None:
        self.facts.update(info)
        self._show()

    def set_activity(self, text: str) -> None:
        self.activity = text
        self._show()

    def set_pull(self, text: str) -> None:
        self.pull = text
        self._show()

    def show_progress(self, progress: IndexProgress) -> None:
        bar = self.query_one(ProgressBar)
        bar.display = True
        bar.update(total=max(progress.files_total, 1), progress=progress.files_done)
        rate = f" · {progress.rate:.0f} passages/s" if progress.rate else ""
        ocr = f" · {progress.ocr_note}" if progress.ocr_note else ""
        self.set_activity(
            f"indexing {progress.files_done}/{progress.files_total} files · "
            f"{progress.passages_done} passages{rate}{ocr}"
        )

    def hide_progress(self) -> None:
        self.query_one(ProgressBar).display = False

    def _show(self) -> None:
        passages = self.facts["passages"]
        server = self.facts.get("llm_server")  # the reader runs there, not on this device
        size = "index …" if passages is None else counted(passages, "passage")
        fallback = " (default not pulled yet)" if self.facts.get("llm_note") else ""
        # The backend (what "auto" measured fastest on this CPU) once the embedder is loaded.
        backend = f" ({self.facts['embed_backend']})" if self.facts.get("embed_backend") else ""
        parts = [
            f"LLM {self.facts['llm']}{fallback}",
            f"embedder {self.facts['embedder']}{backend}",
            f"server {server}" if server else str(self.facts["device"]),
            size,
        ]
        text = " · ".join(parts)
        # A pull of the default reader says more than the hint on how to pull it.
        hint = self.pull or ("" if server else upgrade_hint(self.facts["llm"]))
        if hint:
            text += f"  │  {hint}"
        if self.activity:
            text += f"  │  {self.activity}"
        self.query_one("#status-text", Static).update(text)
