"""Sources whose file changed or vanished since it was indexed.

An answer cites passages as the index holds them; if the file has been edited or
deleted since, the citation may no longer match what the file says. Size and mtime
against the index's file record tell (stat calls only, no reading); ctime is left out
on purpose: a chmod or a backup tool's touch does not make the text stale.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from .index import FileRecord

CHANGED = "changed since indexed"
DELETED = "deleted since indexed"


def stale_sources(records: Mapping[str, FileRecord], sources: Iterable[str]) -> dict[str, str]:
    """Source path -> CHANGED or DELETED for those that differ from their ``records``;
    a source without a record (a dataset document, another index) is never stale."""
    stale = {}
    for source in dict.fromkeys(sources):
        record = records.get(source)
        if record is None:
            continue
        try:
            st = os.stat(source)
        except FileNotFoundError:
            stale[source] = DELETED
            continue
        except OSError:
            continue  # unreadable now (permissions, a dropped mount): nothing to tell
        if (st.st_size, st.st_mtime_ns) != (record.size, record.mtime_ns):
            stale[source] = CHANGED
    return stale
