"""``.iterretgenignore`` files: what a folder's walk leaves out, by gitignore's rules.

A file of that name in the indexed folder or any folder under it lists patterns as a
``.gitignore`` does, relative to its own folder: ``*``, ``**`` and ``?``, a trailing ``/``
for folders only, a leading ``/`` anchoring to the file's folder, ``!`` taking a path
back, ``#`` comments. Within a file the last matching pattern decides; a deeper file
decides before a shallower one. pathspec's GitIgnoreSpec does the matching. As in git, a
path inside an ignored folder cannot be taken back: the walk never enters the folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pathspec import GitIgnoreSpec

from ..counting import counted

IGNORE_FILE = ".iterretgenignore"


@dataclass(frozen=True)
class _Rules:
    folder: Path  # where the patterns are rooted
    source: Path  # the ignore file
    spec: GitIgnoreSpec


@dataclass
class Tally:
    """What one ignore file left out of a walk."""

    source: str  # the ignore file's path
    files: int = 0
    folders: int = 0

    def describe(self) -> str:
        counts = [counted(n, noun) for n, noun in ((self.files, "file"), (self.folders, "folder")) if n]
        return f"ignored {' and '.join(counts)} by {self.source}"

    def to_json(self) -> dict:
        return {"by": self.source, "files": self.files, "folders": self.folders}


class Ignores:
    """The ignore files that apply inside one folder of a walk, shallowest first."""

    def __init__(self, rules: tuple[_Rules, ...] = ()) -> None:
        self.rules = rules

    def enter(self, folder: Path) -> Ignores:
        """The rules inside ``folder``, which has an ignore file: these, then its own.
        Raises OSError when the file cannot be read."""
        source = folder / IGNORE_FILE
        spec = GitIgnoreSpec.from_lines(source.read_text("utf-8", errors="replace").splitlines())
        return Ignores((*self.rules, _Rules(folder, source, spec)))

    def ignored_by(self, path: Path, *, is_folder: bool) -> Path | None:
        """The ignore file that leaves ``path`` out; None when it stays in."""
        for rules in reversed(self.rules):
            relative = path.relative_to(rules.folder).as_posix() + ("/" if is_folder else "")
            verdict = rules.spec.check_file(relative).include  # None: no pattern matches
            if verdict is not None:
                return rules.source if verdict else None
        return None
