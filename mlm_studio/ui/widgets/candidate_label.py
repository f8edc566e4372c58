"""How a fill-mask candidate reads on its button: byte-level pieces read as the text they stand for, white space and
control characters as their pictures."""

from __future__ import annotations

from mlm_studio.core.evaluation.predict import Candidate


def _byte_of_character() -> dict[str, int]:
    """Byte-level BPE's alphabet: each of the 256 bytes spelled as one printable character (the printable ASCII
    and Latin-1 bytes as themselves, the others as the characters from U+0100 on, in byte order)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    others = [b for b in range(256) if b not in printable]
    return {chr(b): b for b in printable} | {chr(256 + n): b for n, b in enumerate(others)}


BYTE_OF_CHARACTER = _byte_of_character()


def written_form(candidate: Candidate) -> tuple[str, str, bool]:
    """How a candidate reads on its button, its tooltip, and whether it can be written into the text. A byte-level
    piece that decodes to nothing readable is read from its bytes: part of a character says which bytes it is,
    white space and control characters show as their pictures."""
    text, token = candidate.text, candidate.token
    if ("\ufffd" in text or not text.strip()) and token and all(c in BYTE_OF_CHARACTER for c in token):
        raw = bytes(BYTE_OF_CHARACTER[c] for c in token)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            hex_bytes = raw.hex(" ")
            tooltip = (
                f"Bytes {hex_bytes} (piece {token}): part of a character written in several pieces; it cannot be "
                "put in the text alone"
            )
            return f"bytes {hex_bytes}", tooltip, False
    blank = not text.strip()
    shown = "".join(_picture(c) if ord(c) < 0x20 or c == "\x7f" or (blank and c == " ") else c for c in text)
    tooltip = f"Put '{shown}' in place of the mask (piece {token})"
    return ("…" if candidate.continues else "") + shown, tooltip, True


def _picture(character: str) -> str:
    """Unicode's picture of a control character or a space (␊ for a new line)."""
    return {" ": "␣", "\x7f": "␡"}.get(character) or chr(0x2400 + ord(character))
