"""The bytes of a file as it is read, decompressed on the way when its name ends in .gz, .bz2, .xz or .zst."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

COMPRESSIONS = (".gz", ".bz2", ".xz", ".zst")
ZSTD_FEED = 2048  # compressed bytes decompressed at a time: zstd's 1:32768 at most makes 64 MiB


@contextmanager
def opened(path: Path) -> Iterator[tuple[io.BufferedIOBase, io.BufferedIOBase]]:
    """The decompressed byte stream of a file, and the file on disk beneath it (for progress)."""
    suffix = path.suffix.lower()
    with open(path, "rb") as on_disk:
        if suffix == ".gz":
            raw = gzip.GzipFile(fileobj=on_disk)
        elif suffix == ".bz2":
            raw = bz2.BZ2File(on_disk)
        elif suffix == ".xz":
            raw = lzma.LZMAFile(on_disk)
        elif suffix == ".zst":
            raw = io.BufferedReader(ZstdFrames(on_disk))
        else:
            yield on_disk, on_disk
            return
        with raw:
            yield raw, on_disk


def damage_errors() -> tuple[type[Exception], ...]:
    """What the decompressors raise for damaged or truncated data."""
    import zstandard

    return (EOFError, lzma.LZMAError, gzip.BadGzipFile, zstandard.ZstdError)


class ZstdFrames(io.RawIOBase):
    """The decompressed bytes of a .zst file, frame after frame, a little compressed data at a time; data that ends
    inside a frame raises `zstandard.ZstdError` (the library's reader would end there silently)."""

    def __init__(self, on_disk: io.BufferedIOBase) -> None:
        import zstandard

        self.zstandard = zstandard
        self.on_disk = on_disk
        self.frame = None  # the decompressor of the frame being read; None between frames
        self.left = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self.left:
            if self.frame is not None and self.frame.eof:
                unused, self.frame = self.frame.unused_data, None
            else:
                unused = self.on_disk.read(ZSTD_FEED)
                if not unused:
                    if self.frame is not None:
                        raise self.zstandard.ZstdError("the data ends inside a frame: the file was cut short")
                    return 0
            if unused:
                self.frame = self.frame or self.zstandard.ZstdDecompressor().decompressobj()
                self.left = memoryview(self.frame.decompress(unused))
        count = min(len(buffer), len(self.left))
        buffer[:count] = self.left[:count]
        self.left = self.left[count:]
        return count
