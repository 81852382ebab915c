"""F2: the settings people change while chatting. Saved to the config file by the app."""

from __future__ import annotations

from dataclasses import replace

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, Select, Switch

from ...config import DEVICES, ConfigError, Settings
from ...engine.loop.options import QUERY_MODES
from ...engine.retrieval.modes import RETRIEVAL_MODES

# (setting, label, choices): choices is a tuple for a list, int or bool for those kinds,
# str for free text (empty keeps the current value where one is required).
FIELDS = (
    ("iterations", "Maximum iterations", int),
    ("top_k", "Passages per retrieval (top-k)", int),
    ("adaptive", "Stop early (answers agree, or nothing new found)", bool),
    ("keep_passages", "Keep earlier iterations' passages", bool),
    ("query_mode", "Iteration 2+ retrieval (feedback: question, last top passage and draft in turn)", QUERY_MODES),
    ("retrieval", "Ranking (hybrid: meaning and keywords fused)", RETRIEVAL_MODES),
    ("llm", "LLM (name or .gguf path)", str),
    ("embedder", "Embedder (name or folder)", str),
    ("query_encoder", "Query encoder (adapted name; empty: the embedder's)", str),
    ("device", "Device", DEVICES),
    ("auto_pull", "Pull the default reader in the background when it is missing", bool),
)
REQUIRED = ("llm", "embedder")


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
        with Vertical(classes="dialog", id="settings") as dialog:
            dialog.border_title = "Settings"
            with Grid(id="settings-grid"):
                for name, label, choices in FIELDS:
                    yield Label(label)
                    yield self.widget(name, choices)
            yield Label(
                "Model changes load in the background (a new embedder indexes the folder again); F5 lists the models.",
                classes="hint",
            )
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

    def widget(self, name: str, choices) -> Input | Switch | Select:
        value = getattr(self.settings, name)
        if choices is bool:
            return Switch(value, id=name)
        if isinstance(choices, tuple):
            return Select([(c, c) for c in choices], value=value, allow_blank=False, id=name)
        return Input(str(value), type="integer" if choices is int else "text", id=name)

    def read(self) -> Settings:
        values = {}
        for name, _, choices in FIELDS:
            widget = self.query_one(f"#{name}")
            if choices is int:
                try:
                    values[name] = int(widget.value.strip())
                except ValueError:
                    raise ConfigError(f"{name.replace('_', '-')} must be a whole number") from None
            elif isinstance(choices, tuple):
                values[name] = str(widget.value)
            elif choices is str:
                values[name] = widget.value.strip() or (getattr(self.settings, name) if name in REQUIRED else "")
            else:
                values[name] = widget.value
        return replace(self.settings, **values).validated()
