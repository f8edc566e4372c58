"""Cloze probes: sentences with one [MASK] and the word expected there, scored at every evaluation.

A probe shows what the model has learnt in words rather than in loss: the rank of the expected word among
all pieces (1 is the top prediction) and its probability. A word the tokenizer splits into several pieces
is judged by its first piece.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mlm_studio.core.errors import UserError
from mlm_studio.core.runs.records import ProbeResult
from mlm_studio.core.shown import shown
from mlm_studio.core.storage.files import atomic_write_text
from mlm_studio.core.storage.json_text import read_json

if TYPE_CHECKING:
    from torch import nn

    from mlm_studio.core.data.tokenizer import MLMTokenizer

PROBES_FILE = "probes.json"


@dataclass(frozen=True)
class Probe:
    text: str  # with exactly one [MASK]
    expected: str  # the word that belongs there

    def __post_init__(self) -> None:
        if self.text.count("[MASK]") != 1:
            raise UserError(f"a probe needs exactly one [MASK]: {shown(self.text)}")
        if not self.expected.strip() or " " in self.expected.strip():
            raise UserError(f"a probe expects one word, not {shown(self.expected)}")


def save_probes(folder: Path, probes: list[Probe]) -> None:
    atomic_write_text(Path(folder) / PROBES_FILE, json.dumps([asdict(p) for p in probes], indent=1))


def load_probes(folder: Path) -> list[Probe]:
    """The probes saved in a run folder; none if there is no probes file."""
    path = Path(folder) / PROBES_FILE
    if not path.exists():
        return []
    try:
        return [Probe(**item) for item in read_json(path.read_text(encoding="utf-8"))]
    except (ValueError, TypeError) as exc:
        raise UserError(f"{path.name} is damaged ({exc})") from exc


def score_probes(model: nn.Module, tokenizer: MLMTokenizer, probes: list[Probe]) -> tuple[ProbeResult, ...]:
    """Rank and probability of each probe's expected word at its [MASK]."""
    import torch  # only scoring needs PyTorch: the window reads and edits probes without it

    with torch.no_grad():
        return _scored(model, tokenizer, probes)


def _scored(model: nn.Module, tokenizer: MLMTokenizer, probes: list[Probe]) -> tuple[ProbeResult, ...]:
    import torch

    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    results = []
    for probe in probes:
        ids = torch.tensor([tokenizer.encode_text(probe.text)[0]], device=device)
        position = (ids[0] == tokenizer.mask_id).nonzero().flatten()[:1]
        pieces = tokenizer.encode_batch([" " + probe.expected.strip()])[0].ids  # as a word after a space
        if len(position) == 0 or len(pieces) == 0:
            continue
        logits = model.predict_at(ids, torch.stack([torch.zeros_like(position), position], dim=1))[0]
        probabilities = logits.float().softmax(-1)
        target = probabilities[int(pieces[0])]
        rank = int((probabilities > target).sum()) + 1
        results.append(ProbeResult(probe.expected, rank, float(target), probe.text))
    model.train(was_training)
    return tuple(results)
