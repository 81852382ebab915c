"""The app quits when its terminal goes away (ui/terminal.py)."""

from __future__ import annotations

import os
import pty
import sys

import pytest

from iterretgen_tui.ui.terminal import hung_up, terminal_fd

from .tui_support import make_app, pilot_test, wait_for

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal is POSIX")


@posix_only
def test_a_terminal_hangs_up_when_its_other_end_closes():
    leader, follower = pty.openpty()
    try:
        assert not hung_up(follower)
        os.write(leader, b"q")  # a keypress waiting is no hangup
        assert not hung_up(follower)
        os.close(leader)
        assert hung_up(follower)
    finally:
        os.close(follower)


@posix_only
def test_only_a_terminal_is_watched():
    leader, follower = pty.openpty()
    reading, writing = os.pipe()
    try:
        with os.fdopen(os.dup(follower)) as stream:
            assert terminal_fd(stream) == stream.fileno()
        with os.fdopen(os.dup(reading)) as stream:
            assert terminal_fd(stream) is None  # a pipe at its end reads as hung up: not watched
        assert terminal_fd(object()) is None
    finally:
        for fd in (leader, follower, reading, writing):
            os.close(fd)


@posix_only
@pilot_test
async def test_the_app_quits_when_its_terminal_hangs_up(tmp_path):
    """An SSH connection that drops without a SIGHUP left the app at 100% of a core."""
    leader, follower = pty.openpty()
    app, _ = make_app(tmp_path)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, app.ready.is_set)
            app.quit_if_hung_up(follower)
            await pilot.pause(0.1)
            assert app.is_running
            os.close(leader)
            leader = None
            app.quit_if_hung_up(follower)
            await wait_for(pilot, lambda: not app.is_running)
    finally:
        os.close(follower)
        if leader is not None:
            os.close(leader)
