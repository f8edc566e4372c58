"""How classification and tagging learn and are scored: a batch of padded examples, the cross-entropy of each
text's label (or each piece's tag), and the scores of `scores.py` on the texts, or on the words read on their
first pieces. The fine-tuner asks its task's kind (this one, or `qa/kind.py`'s) and nothing else."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from mlm_studio.core.data.masking import IGNORE_INDEX
from mlm_studio.core.finetune.examples import Encoded, collate
from mlm_studio.core.finetune.scores import class_scores, main_score, tag_scores

Scoring = Callable[[int, int], None] | None  # told (done, total) as a part's batches are scored


@dataclass(frozen=True)
class Evaluation:
    """A model's measures on some examples: the mean loss, the record fields it measured, the score that chooses
    the best checkpoint, and the test record's other fields (labels, per-class scores, confusion matrix)."""

    loss: float
    measures: dict
    score: float
    details: dict


class LabelKind:
    """A label per text (or text pair), or a tag per word."""

    def __init__(self, labels: list[str]) -> None:
        self.labels = labels

    def batch(self, part: Encoded, indices: np.ndarray, pad_id: int, device: torch.device):
        """(ids, attention mask, segment ids, targets) of some examples, padded to the longest."""
        return collate(part, indices, pad_id, device)

    def loss(self, logits: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, int]:
        """(mean cross-entropy, labels predicted right, labels counted) of a batch's logits."""
        flat, targets = logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)
        loss = F.cross_entropy(flat.float(), targets, ignore_index=IGNORE_INDEX)
        counted = targets != IGNORE_INDEX
        correct = (flat.detach().argmax(-1) == targets)[counted].sum()
        return loss, correct, int(counted.sum())

    @torch.no_grad()
    def evaluate(
        self, model: torch.nn.Module, part: Encoded, batch_size: int, pad_id: int, device, progress: Scoring = None
    ) -> Evaluation:
        """The model's loss and scores on `part` (its batches reported to `progress`). The loss counts what training
        learns (a word's every piece); the scores count texts, or words read on their first pieces."""
        loss_sum, counted = 0.0, 0
        predicted: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * len(part)
        order = np.argsort(part.lengths(), kind="stable")
        for start in range(0, len(order), batch_size):
            if progress is not None:
                progress(start, len(order))
            batch = order[start : start + batch_size]
            ids, mask, types, labels = collate(part, batch, pad_id, device)
            logits = model(ids, mask, types).float()
            flat, targets = logits.reshape(-1, logits.shape[-1]), labels.reshape(-1)
            keep = targets != IGNORE_INDEX
            loss_sum += float(F.cross_entropy(flat[keep], targets[keep], reduction="sum"))
            counted += int(keep.sum())
            guesses = logits.argmax(-1).cpu().numpy()  # per token, or one per example
            for row, i in enumerate(batch):
                predicted[i] = (guesses[row] if part.per_token else guesses[row : row + 1])[part.scored[i]]
        scores = self._scores(part, predicted)
        measures = {
            "accuracy": scores.accuracy,
            "macro_f1": scores.macro_f1,
            "entity_precision": scores.entity_precision,
            "entity_recall": scores.entity_recall,
            "entity_f1": scores.entity_f1,
        }
        details = {
            "labels": tuple(self.labels),
            "per_class": tuple((c.label, c.precision, c.recall, c.f1, c.support) for c in scores.per_class),
            "confusion": scores.confusion,
            "confusions": scores.confusions,
        }
        return Evaluation(loss_sum / max(counted, 1), measures, main_score(scores), details)

    def baseline(self, train: Encoded, validation: Encoded) -> float:
        """The main score of naming the training examples' most frequent label (or tag) for every validation
        example (or word): what a model that learned nothing of the texts scores."""
        counts = np.bincount(np.concatenate(_scored(train)), minlength=len(self.labels))
        return main_score(self._scores(validation, [np.full_like(row, counts.argmax()) for row in _scored(validation)]))

    def _scores(self, part: Encoded, predicted: list[np.ndarray]):
        """The scores of `predicted` (label ids where each of `part`'s examples is scored) against its labels."""
        true, names = _scored(part), self.labels
        if part.per_token:
            return tag_scores(
                [[names[i] for i in row] for row in true], [[names[i] for i in row] for row in predicted], names
            )
        return class_scores(np.concatenate(true), np.concatenate(predicted), names)


def _scored(part: Encoded) -> list[np.ndarray]:
    """Each example's label ids where it is scored: its one label, or its words' first pieces' tags."""
    return [row[scored] for row, scored in zip(part.labels, part.scored, strict=True)]
