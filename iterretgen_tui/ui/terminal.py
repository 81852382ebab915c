"""Whether the terminal the app reads from has gone away.

When a terminal closes without a SIGHUP reaching the app (an SSH connection that drops,
a tmux pane whose command was `make run`: make waits for the app and passes no signal
on), Textual's input thread reads end-of-file from then on, again and again: the app
stayed alive at 100% of a core, holding the reader's memory, with no one to see it. The
app checks now and then, and quits.
"""

from __future__ import annotations

import os
import select

HANGUP_CHECK_SECONDS = 1.0


def terminal_fd(stream) -> int | None:
    """The file descriptor of ``stream`` where it is a terminal; None otherwise (a pipe,
    a test's stand-in, a headless run), where there is nothing to watch."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return None
    return fd if os.isatty(fd) else None


def hung_up(fd: int) -> bool:
    """The terminal behind ``fd`` has hung up (its other end closed). Asks without
    reading, so no keypress is taken from the app's input thread."""
    if not hasattr(select, "poll"):  # Windows: its console has no hangup to watch
        return False
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return any(events & (select.POLLHUP | select.POLLERR | select.POLLNVAL) for _, events in poller.poll(0))
