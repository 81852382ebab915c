import re
from dataclasses import fields
from pathlib import Path

import pytest

from iterretgen_tui import config, paths

ROOT = Path(__file__).resolve().parent.parent


def test_layers_defaults_file_env_flags(monkeypatch):
    path = paths.config_file()
    path.write_text('top_k = 7\niterations = 4\ndevice = "cpu"\n')
    monkeypatch.setenv("ITERRETGEN_ITERATIONS", "2")
    monkeypatch.setenv("ITERRETGEN_ADAPTIVE", "off")
    settings = config.load({"device": "cuda", "top_k": None})
    assert settings.top_k == 7  # file
    assert settings.iterations == 2  # env beats file
    assert settings.adaptive is False
    assert settings.device == "cuda"  # flag beats file
    assert settings.n_ctx == config.Settings().n_ctx  # default


def test_save_round_trip(monkeypatch):
    monkeypatch.delenv("ITERRETGEN_LLM")  # the suite's pins (conftest) would override the file
    monkeypatch.delenv("ITERRETGEN_READ_AHEAD")
    settings = config.Settings(top_k=9, keep_passages=False, last_folder="/x")
    config.save(settings)
    assert config.load() == settings


def test_save_leaves_defaults_to_the_version_that_runs(monkeypatch):
    """A value equal to the default is not written, so a later version's better default
    reaches the user (the whole file pinned every default before)."""
    monkeypatch.delenv("ITERRETGEN_LLM")
    monkeypatch.delenv("ITERRETGEN_READ_AHEAD")
    path = config.save(config.Settings(top_k=9))
    assert path.read_text().strip() == "top_k = 9"
    assert config.load() == config.Settings(top_k=9)


@pytest.mark.parametrize(
    "text, message",
    [
        ("top_k = 0", "top_k must be at least 1"),
        ("colour = 1", "unknown setting"),
        ("device = 'tpu'", "device must be one of"),
        ("top_k = [", "not valid TOML"),
        ("adaptive = 'maybe'", "true or false"),
    ],
)
def test_bad_config_gives_a_clear_message(text, message):
    paths.config_file().write_text(text)
    with pytest.raises(config.ConfigError, match=message):
        config.load()


def test_home_overrides_every_location(tmp_path, monkeypatch):
    monkeypatch.setenv("ITERRETGEN_HOME", str(tmp_path / "h"))
    for location in (paths.data_dir(), paths.config_dir(), paths.cache_dir(), paths.index_dir(tmp_path)):
        assert str(location).startswith(str(tmp_path / "h"))
    assert paths.index_dir(tmp_path / "a") != paths.index_dir(tmp_path / "b")


@pytest.mark.parametrize("command", [["ask", "Who?", "--folder", "."], ["eval", "data"]])
def test_keep_passages_flag_overrides_the_setting_both_ways(command):
    from iterretgen_tui.cli import build_parser, settings_from

    config.save(config.Settings(keep_passages=False))
    parser = build_parser()
    for flags, expected in (([], False), (["--keep-passages"], True), (["--no-keep-passages"], False)):
        args = parser.parse_args(command + flags)
        assert settings_from(args, keep_passages=args.keep_passages).keep_passages is expected


def test_decoding_penalties_are_read_from_the_environment_and_checked(monkeypatch):
    monkeypatch.setenv("ITERRETGEN_REPEAT_PENALTY", "1.1")
    monkeypatch.setenv("ITERRETGEN_PRESENCE_PENALTY", "0.5")
    settings = config.load()
    assert (settings.repeat_penalty, settings.presence_penalty) == (1.1, 0.5)
    monkeypatch.setenv("ITERRETGEN_REPEAT_PENALTY", "0")
    with pytest.raises(config.ConfigError, match="repeat_penalty must be above 0"):
        config.load()


@pytest.mark.parametrize("command", [["ask", "q", "--folder", "."], ["eval", "."]])
def test_the_read_budgets_come_from_flags_and_are_checked(command):
    from iterretgen_tui.cli import build_parser, settings_from

    args = build_parser().parse_args([*command, "--read-tokens", "200", "--check-read-tokens", "500"])
    options = settings_from(args).loop
    assert (options.read_budget(1), options.read_budget(2)) == (200, 500)
    with pytest.raises(config.ConfigError, match="check_read_tokens must be at least 1"):
        _ = settings_from(build_parser().parse_args([*command, "--check-read-tokens", "0"])).loop


def test_the_settings_reference_gives_every_setting_with_its_default():
    """docs/settings.md is the reference: a setting added, renamed or given another default
    without it fails here."""
    rows = re.findall(r"^\| `(\w+)` \| ([^|]+) \| `(\w+)` \|", (ROOT / "docs" / "settings.md").read_text("utf-8"), re.M)
    documented = {name: default.strip() for name, default, _ in rows}
    assert all(variable == f"ITERRETGEN_{name.upper()}" for name, _, variable in rows)
    defaults = config.Settings()
    for field in fields(config.Settings):
        if field.name == "last_folder":  # written by the app, not chosen
            continue
        value = getattr(defaults, field.name)
        shown = f"`{str(value).lower()}`" if isinstance(value, bool) else f"`{value}`"
        if value in ("", ()):  # a string or a list of folders left empty
            shown = "empty" if value == "" else "none"
        assert documented.get(field.name) == shown, field.name
