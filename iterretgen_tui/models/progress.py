"""A pull's progress as plain callbacks, and a way to stop it: for the TUI's models screen.

``pull`` reports through a tqdm class (huggingface_hub's downloads take one); this one
draws nothing (a bar on stderr would scribble over the window) and hands every update
to ``report``. Setting ``cancel`` makes the next update raise ``PullCancelled``: the
partial file stays beside its destination and the next pull resumes it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from huggingface_hub.utils import tqdm

Report = Callable[[str, int, "int | None"], None]  # (file, bytes done, bytes in all or None)


class PullCancelled(Exception):
    """The user stopped the pull; what was downloaded is kept for the next one."""


def reporting_bar(report: Report, cancel: threading.Event) -> type[tqdm]:
    class ReportingBar(tqdm):
        def __init__(self, *args, **kwargs) -> None:
            kwargs["disable"] = True
            super().__init__(*args, **kwargs)
            self.bytes_total = kwargs.get("total")
            self.file = kwargs.get("desc") or ""
            report(self.file, self.n, self.bytes_total)

        def update(self, n: float | None = 1) -> bool | None:
            if cancel.is_set():
                raise PullCancelled
            # A disabled tqdm counts nothing; callers read ``n`` back, so it is counted here.
            self.n += int(n or 0)
            report(self.file, self.n, self.bytes_total)
            return None

    return ReportingBar
