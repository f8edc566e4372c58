"""Where a model is right and where it fails, on held-out blocks under the evaluation's own fixed masking:
every masked position's answer, accuracy by how frequent the token is in the corpus, by piece kind and by
masking treatment, the most frequent confusions, and calibration. The overall loss and accuracies are the
trainer's evaluation, computed the same way on the same blocks."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import torch
import torch.nn.functional as F

from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.data.dataset import BlockSet
from mlm_studio.core.data.masking import IGNORE_INDEX, Masker, MaskKind
from mlm_studio.core.data.tokenizer import MLMTokenizer
from mlm_studio.core.evaluation.predict import check_vocabulary
from mlm_studio.core.progress import Progress
from mlm_studio.core.training.held_out import EVAL_SEED, mask_blocks

FREQUENCY_EDGES = (10, 100, 1_000, 10_000)  # corpus occurrences that separate the frequency buckets
CALIBRATION_BINS = 10
TOP_K = 5
KIND_NAMES = {MaskKind.MASK: "[MASK]", MaskKind.RANDOM: "random", MaskKind.KEPT: "kept"}


@dataclass(frozen=True)
class Share:
    """Accuracy over one group of masked positions."""

    name: str
    count: int
    accuracy: float


@dataclass(frozen=True)
class Answer:
    """The model's answer at one masked position."""

    position: int
    expected: int
    kind: int  # MaskKind
    top: tuple[int, ...]  # the top-k ids, most likely first
    probabilities: tuple[float, ...]

    @property
    def correct(self) -> bool:
        return self.top[0] == self.expected


@dataclass(frozen=True)
class Sample:
    """One held-out block as the model saw it, with its answers."""

    original: tuple[int, ...]
    shown: tuple[int, ...]  # after masking
    answers: tuple[Answer, ...]
    loss: float  # mean over its masked positions


@dataclass(frozen=True)
class Diagnosis:
    loss: float
    accuracy: float
    top5_accuracy: float
    predicted: int
    ece: float  # expected calibration error of the top-1 confidence
    calibration: tuple[tuple[float, float, int], ...]  # per confidence bin: mean confidence, accuracy, positions
    by_frequency: tuple[Share, ...]
    by_kind: tuple[Share, ...]  # word start, continuation, then [MASK], random, kept
    confusions: tuple[tuple[str, str, int], ...]  # expected, predicted, how often
    samples: tuple[Sample, ...]

    def to_json(self) -> dict:
        """The command line's `--json` object."""
        return {
            "masked_accuracy": self.accuracy,
            "top5_accuracy": self.top5_accuracy,
            "loss": self.loss,
            "ece": self.ece,
            "by_frequency": [{"bucket": s.name, "count": s.count, "accuracy": s.accuracy} for s in self.by_frequency],
            "by_kind": {s.name: {"count": s.count, "accuracy": s.accuracy} for s in self.by_kind},
            "confusions": [{"expected": e, "predicted": p, "count": n} for e, p, n in self.confusions],
            "calibration": [dict(zip(("confidence", "accuracy", "count"), b)) for b in self.calibration],
        }


@torch.no_grad()
def diagnose(
    model: torch.nn.Module,
    tokenizer: MLMTokenizer,
    config: RunConfig,
    validation: BlockSet,
    samples: int = 32,
    confusions: int = 20,
    progress: Progress | None = None,
) -> Diagnosis:
    """Score `model` on the run's evaluation blocks with the evaluation's masking (the first `samples` blocks
    are kept whole for inspection)."""
    progress = progress or Progress()
    check_vocabulary(tokenizer, model.config)
    device = next(model.parameters()).device
    masker = Masker.for_tokenizer(config.masking, tokenizer, device)
    generator = torch.Generator(device=device)
    t = config.training
    count = len(validation) if t.eval_blocks == 0 else min(t.eval_blocks, len(validation))
    was_training = model.training
    model.eval()
    rows: list[dict[str, np.ndarray]] = []
    kept: list[Sample] = []
    loss_sum = 0.0
    for number, start in enumerate(range(0, count, t.batch_size)):
        progress.check()
        progress.report(start, count, "Scoring held-out blocks")
        indices = np.arange(start, min(start + t.batch_size, count))
        masked, attention, _, batch = mask_blocks(validation, indices, EVAL_SEED + number, masker, generator, device)
        out = model(masked.input_ids, attention, masked.labels)
        if len(out.labels) == 0:
            continue
        logits = out.logits.float()
        losses = F.cross_entropy(logits, out.labels, reduction="none")
        loss_sum += float(losses.sum())
        probabilities, top = logits.softmax(-1).topk(min(TOP_K, logits.shape[-1]), dim=-1)
        where = (masked.labels != IGNORE_INDEX).nonzero().cpu().numpy()  # (N, 2) row, position: labels' order
        words = batch.word_ids[where[:, 0], where[:, 1]]
        before = batch.word_ids[where[:, 0], np.maximum(where[:, 1] - 1, 0)]
        part = {
            "row": where[:, 0] + start,
            "position": where[:, 1],
            "expected": out.labels.cpu().numpy(),
            "top": top.cpu().numpy(),
            "probabilities": probabilities.cpu().numpy(),
            "kind": masked.kinds[masked.labels != IGNORE_INDEX].cpu().numpy(),
            "word_start": (words != before) | (where[:, 1] == 0),
            "loss": losses.cpu().numpy(),
        }
        rows.append(part)
        kept += _samples(part, batch.input_ids, masked.input_ids.cpu().numpy(), start, samples - len(kept))
    model.train(was_training)
    progress.report(count, count, "Scored")
    every = {key: np.concatenate([r[key] for r in rows]) for key in rows[0]} if rows else {}
    return _diagnosis(every, loss_sum, np.bincount(validation.data.ids, minlength=tokenizer.vocab_size), tokenizer,
                      confusions, tuple(kept))  # fmt: skip


def _samples(part: dict, original: np.ndarray, shown: np.ndarray, start: int, wanted: int) -> list[Sample]:
    out = []
    for row in range(min(wanted, len(original))):
        mine = np.flatnonzero(part["row"] == start + row)
        answers = tuple(
            Answer(int(part["position"][i]), int(part["expected"][i]), int(part["kind"][i]),
                   tuple(int(x) for x in part["top"][i]), tuple(float(p) for p in part["probabilities"][i]))
            for i in mine
        )  # fmt: skip
        loss = float(part["loss"][mine].mean()) if len(mine) else math.nan
        out.append(Sample(tuple(int(x) for x in original[row]), tuple(int(x) for x in shown[row]), answers, loss))
    return out


def _diagnosis(every: dict, loss_sum: float, frequency: np.ndarray, tokenizer: MLMTokenizer, confusions: int,
               samples: tuple[Sample, ...]) -> Diagnosis:  # fmt: skip
    n = len(every.get("expected", ()))
    if n == 0:
        return Diagnosis(math.nan, math.nan, math.nan, 0, math.nan, (), (), (), (), samples)
    hit = every["top"][:, 0] == every["expected"]
    hit5 = (every["top"] == every["expected"][:, None]).any(-1)

    def share(name: str, where: np.ndarray) -> Share:
        return Share(name, int(where.sum()), float(hit[where].mean()) if where.any() else math.nan)

    counts = frequency[every["expected"]]
    edges = (0, *FREQUENCY_EDGES, math.inf)
    by_frequency = tuple(
        share(f"{low:,}–{high - 1:,}" if high != math.inf else f"{low:,}+", (counts >= low) & (counts < high))
        for low, high in pairwise(edges)
    )
    by_kind = (
        share("word start", every["word_start"]),
        share("continuation", ~every["word_start"]),
        *(share(name, every["kind"] == kind) for kind, name in KIND_NAMES.items()),
    )
    wrong = Counter(zip(every["expected"][~hit].tolist(), every["top"][~hit, 0].tolist()))
    confused = tuple(
        (tokenizer.id_to_token(e), tokenizer.id_to_token(p), c) for (e, p), c in wrong.most_common(confusions)
    )
    calibration, ece = _calibration(every["probabilities"][:, 0], hit)
    return Diagnosis(loss_sum / n, float(hit.mean()), float(hit5.mean()), n, ece, calibration, by_frequency,
                     by_kind, confused, samples)  # fmt: skip


def _calibration(confidence: np.ndarray, hit: np.ndarray) -> tuple[tuple[tuple[float, float, int], ...], float]:
    """Reliability bins of the top-1 confidence and the expected calibration error (bins weighted by size)."""
    bins = np.minimum((confidence * CALIBRATION_BINS).astype(int), CALIBRATION_BINS - 1)
    table, ece = [], 0.0
    for b in range(CALIBRATION_BINS):
        inside = bins == b
        if inside.any():
            mean_confidence, accuracy = float(confidence[inside].mean()), float(hit[inside].mean())
            table.append((mean_confidence, accuracy, int(inside.sum())))
            ece += inside.mean() * abs(mean_confidence - accuracy)
    return tuple(table), float(ece)
