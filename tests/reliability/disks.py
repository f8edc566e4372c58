"""What the full-disk tests share: a real filesystem filled to its last byte by a file of the user's."""


def fill(folder) -> int:
    """Fill the filesystem of `folder` to its last byte with a file of the user's; its size."""
    written_bytes = 0
    with open(folder / "filler.bin", "wb", buffering=0) as filler:
        try:
            while True:
                written_bytes += filler.write(b"u" * 65536)
        except OSError:
            pass
        try:
            while True:
                written_bytes += filler.write(b"u")
        except OSError:
            pass
    return written_bytes
