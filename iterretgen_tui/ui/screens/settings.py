"""F2: the settings people change while chatting. Saved to the config file by the app."""

from __future__ import annotations

from dataclasses import replace

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, Select, Switch

from ...config import DEVICES, ConfigError, Settings
from ...engine.loop.iterretgen import QUERY_MODES


class SettingsScreen(ModalScreen[Settings | None]):
    """Dismisses with the new, validated settings, or None when cancelled."""

    BINDINGS = [
        Binding("escape", "dismiss", "Cancel"),
        Binding("ctrl+s", "save", "Save"),
    ]

    def __init__(self, settings: Settings) -> None:
        super().__init__()
        self.settings = settings

    def compose(self) -> ComposeResult:
        s = self.settings
        with Vertical(classes="dialog", id="settings") as dialog:
            dialog.border_title = "Settings"
            with Grid(id="settings-grid"):
                yield Label("Maximum iterations")
                yield Input(str(s.iterations), type="integer", id="iterations")
                yield Label("Passages per retrieval (top-k)")
                yield Input(str(s.top_k), type="integer", id="top_k")
                yield Label("Stop early when answers agree")
                yield Switch(s.adaptive, id="adaptive")
                yield Label("Keep earlier iterations' passages")
                yield Switch(s.keep_passages, id="keep_passages")
                yield Label("Iteration 2+ retrieval (draft alone, fused or interleaved with the question)")
                yield Select([(m, m) for m in QUERY_MODES], value=s.query_mode, allow_blank=False, id="query_mode")
                yield Label("LLM (name or .gguf path)")
                yield Input(s.llm, id="llm")
                yield Label("Embedder (name or folder)")
                yield Input(s.embedder, id="embedder")
                yield Label("Query encoder (adapted name; empty: the embedder's)")
                yield Input(s.query_encoder, id="query_encoder")
                yield Label("Device")
                yield Select([(d, d) for d in DEVICES], value=s.device, allow_blank=False, id="device")
            yield Label("Model changes load in the background (a new embedder indexes the folder again); F5 lists the models.", classes="hint")
            with Horizontal(classes="buttons"):
                yield Button("Save", variant="primary", id="save")
                yield Button("Cancel", id="cancel")
        yield Footer()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "save":
            self.action_save()
        else:
            self.dismiss(None)

    def action_save(self) -> None:
        try:
            settings = self.read()
        except ConfigError as exc:
            self.notify(str(exc), title="Settings", severity="error")
            return
        self.dismiss(settings)

    def read(self) -> Settings:
        def number(name: str) -> int:
            text = self.query_one(f"#{name}", Input).value.strip()
            try:
                return int(text)
            except ValueError:
                raise ConfigError(f"{name.replace('_', '-')} must be a whole number") from None

        return replace(
            self.settings,
            iterations=number("iterations"),
            top_k=number("top_k"),
            adaptive=self.query_one("#adaptive", Switch).value,
            keep_passages=self.query_one("#keep_passages", Switch).value,
            query_mode=str(self.query_one("#query_mode", Select).value),
            llm=self.query_one("#llm", Input).value.strip() or self.settings.llm,
            embedder=self.query_one("#embedder", Input).value.strip() or self.settings.embedder,
            query_encoder=self.query_one("#query_encoder", Input).value.strip(),
            device=str(self.query_one("#device", Select).value),
        ).validated()
