"""What a GGUF file says about itself: its metadata and tensor shapes, never its weights.

gguf.GGUFReader parses every value into numpy views, the vocabulary's 150k strings and
as many merges included: 8 s for the 1.1 GB Qwen reader on a loaded 2-core machine. This
walks the same header with struct over a memory map, keeping scalars and strings and
stepping over arrays, so only the header's pages are ever read (tens of milliseconds).
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from math import prod
from pathlib import Path

from gguf import GGUF_MAGIC, GGUFValueType

_SCALARS = {
    GGUFValueType.UINT8: "B",
    GGUFValueType.INT8: "b",
    GGUFValueType.UINT16: "H",
    GGUFValueType.INT16: "h",
    GGUFValueType.UINT32: "I",
    GGUFValueType.INT32: "i",
    GGUFValueType.FLOAT32: "f",
    GGUFValueType.BOOL: "?",
    GGUFValueType.UINT64: "Q",
    GGUFValueType.INT64: "q",
    GGUFValueType.FLOAT64: "d",
}


class HeaderError(ValueError):
    """The file is not a GGUF, or its header is cut short or malformed."""


@dataclass(frozen=True)
class Header:
    metadata: dict[str, object]  # scalars and strings; an array is kept as its length
    parameters: int  # elements of all tensors, from their shapes


class _Cursor:
    def __init__(self, data: mmap.mmap, order: str) -> None:
        self.data, self.order, self.at = data, order, 0

    def unpack(self, code: str) -> int | float | bool:
        (value,) = struct.unpack_from(self.order + code, self.data, self.at)
        self.at += struct.calcsize(code)
        return value

    def string(self) -> str:
        length = self.unpack("Q")
        end = self.at + length
        if end > len(self.data):
            raise HeaderError("a string runs past the end of the file")
        text = self.data[self.at : end].decode("utf-8", errors="replace")
        self.at = end
        return text

    def value(self, kind: int) -> object:
        kind = GGUFValueType(kind)
        if kind == GGUFValueType.STRING:
            return self.string()
        if kind != GGUFValueType.ARRAY:
            return self.unpack(_SCALARS[kind])
        item, count = GGUFValueType(self.unpack("I")), self.unpack("Q")
        if item == GGUFValueType.STRING:
            if count * 8 > len(self.data) - self.at:
                raise HeaderError("an array runs past the end of the file")
            length = struct.Struct(self.order + "Q").unpack_from
            for _ in range(count):  # each string's length says where the next begins
                self.at += 8 + length(self.data, self.at)[0]
        elif item == GGUFValueType.ARRAY:
            raise HeaderError("nested arrays are not read")
        else:
            self.at += count * struct.calcsize(_SCALARS[item])
        return count


def read_header(path: Path) -> Header:
    """The header of the GGUF at ``path``. Raises HeaderError for a file that is not one
    and OSError for one that cannot be read."""
    with path.open("rb") as fh:
        if fh.read(4) != GGUF_MAGIC.to_bytes(4, "little"):
            raise HeaderError("not a GGUF file")
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            try:
                return _walk(data)
            except (struct.error, ValueError) as exc:  # ValueError: an unknown value type
                raise HeaderError(f"malformed header ({exc})") from None


def _walk(data: mmap.mmap) -> Header:
    (version,) = struct.unpack_from("<I", data, 4)
    order = ">" if version & 0xFFFF == 0 else "<"  # a big-endian file's version reads byte-swapped
    cursor = _Cursor(data, order)
    cursor.at = 8
    tensors, kv_count = cursor.unpack("Q"), cursor.unpack("Q")
    metadata = {}
    for _ in range(kv_count):
        key = cursor.string()
        metadata[key] = cursor.value(cursor.unpack("I"))
    parameters = 0
    for _ in range(tensors):
        cursor.string()  # the tensor's name
        dims = [cursor.unpack("Q") for _ in range(cursor.unpack("I"))]
        cursor.at += 4 + 8  # its type and the offset of its data
        parameters += prod(dims)
    return Header(metadata, parameters)
