"""`iterretgen-chat [FOLDER]`: the folder to open, and one-line errors instead of tracebacks."""

from __future__ import annotations

import pytest

from iterretgen_tui import cli, config
from iterretgen_tui.commands import tui


def test_no_folder_given_and_none_remembered_is_a_one_line_error(capsys):
    assert cli.main([]) == 2
    err = capsys.readouterr().err
    assert err == "iterretgen-chat: which documents? run `iterretgen-chat FOLDER`\n"


def test_a_missing_folder_is_a_one_line_error(tmp_path, capsys):
    assert cli.main([str(tmp_path / "nope")]) == 2
    assert capsys.readouterr().err.strip() == f"iterretgen-chat: folder not found: {tmp_path / 'nope'}"


def test_the_folder_is_remembered_and_flags_are_not_saved(tmp_path):
    config.remember_folder(tmp_path)
    assert config.load().last_folder == str(tmp_path)
    assert tui.resolve_folder(None, config.load().last_folder) == tmp_path


def test_flags_reach_the_app_settings(tmp_path, monkeypatch):
    monkeypatch.delenv("ITERRETGEN_LLM")  # the suite's pin (conftest): here the default is the point
    seen = {}

    class Recorder:
        def __init__(self, settings, folder, factory):
            seen.update(settings=settings, folder=folder, factory=factory)

        def run(self):
            return None

    monkeypatch.setattr("iterretgen_tui.ui.app.ChatApp", Recorder)
    assert tui.main([str(tmp_path), "--llm", "/models/x.gguf", "--device", "cpu"]) == 0
    assert seen["folder"] == tmp_path
    assert (seen["settings"].llm, seen["settings"].device) == ("/models/x.gguf", "cpu")
    assert seen["settings"].last_folder == str(tmp_path)
    assert config.load().llm == config.Settings().llm  # flags are for this run only
    other = tmp_path / "other"
    other.mkdir()
    assert tui.main(["--folder", str(other)]) == 0  # as `ask` takes it
    assert seen["folder"] == other


def test_help_mentions_the_folder(capsys):
    with pytest.raises(SystemExit):
        tui.build_parser().parse_args(["--help"])
    assert "FOLDER" in capsys.readouterr().out.upper()


def test_the_commands_help_says_how_the_chat_opens(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert "iterretgen-chat [FOLDER]" in out and "the chat opens over FOLDER" in out


@pytest.mark.parametrize("command", ["ask", "index", "eval", "models"])
def test_a_commands_usage_names_that_command_alone(capsys, command):
    with pytest.raises(SystemExit):
        cli.main([command, "--help"])
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"usage: iterretgen-chat {command} [-h]"), first
