"""How question answering learns and is scored: a batch of windows, the mean of the start and the end
cross-entropies (as `transformers`' `…ForQuestionAnswering`), and every window decoded into its question's
answer (`qa/decoding.py`) and scored as SQuAD scores it (`qa/metric.py`), SQuAD v2's questions with and without
an answer apart."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from mlm_studio.core.finetune.label_kind import Evaluation, Scoring
from mlm_studio.core.finetune.qa.decoding import best_answers
from mlm_studio.core.finetune.qa.metric import squad_scores

NO_DETAILS = {
    "labels": (),
    "per_class": (),
    "confusion": (),
    "confusions": (),
}  # a test record's per-class fields, for answers


class AnswerKind:
    """A span of the context per question: each window learns its answer's first and last token (the first
    token of the window where the answer is not in it)."""

    def __init__(self, max_answer_length: int, allow_impossible: bool) -> None:
        """`allow_impossible`: whether "no answer" may be answered (the task's files have unanswerable
        questions)."""
        self.max_answer_length, self.allow_impossible = max_answer_length, allow_impossible

    def batch(self, part, indices: np.ndarray, pad_id: int, device: torch.device):
        """(ids, attention mask, segment ids, targets (B, 2): start and end) of some windows, padded to the
        longest."""
        features = part.features
        length = max(len(features.ids[i]) for i in indices)
        ids = torch.full((len(indices), length), pad_id, dtype=torch.long)
        mask = torch.zeros((len(indices), length), dtype=torch.long)
        types = torch.zeros((len(indices), length), dtype=torch.long)
        for row, i in enumerate(indices):
            n = len(features.ids[i])
            ids[row, :n] = torch.from_numpy(features.ids[i])
            mask[row, :n] = 1
            types[row, :n] = torch.from_numpy(features.types[i])
        targets = torch.from_numpy(np.stack([features.start[indices], features.end[indices]], axis=1))
        return ids.to(device), mask.to(device), types.to(device), targets.to(device)

    def loss(self, logits: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, int]:
        """(the mean of the start and end cross-entropies, positions found, positions counted) of a batch's
        logits (B, L, 2)."""
        logits = logits.float()
        loss = (F.cross_entropy(logits[..., 0], targets[:, 0]) + F.cross_entropy(logits[..., 1], targets[:, 1])) / 2
        correct = (logits.detach().argmax(1) == targets).sum()
        return loss, correct, targets.numel()

    def baseline(self, train, validation) -> None:
        """None: answers have no one answer that a model which learned nothing of the texts would give."""
        return None

    @torch.no_grad()
    def evaluate(
        self, model: torch.nn.Module, part, batch_size: int, pad_id: int, device, progress: Scoring = None
    ) -> Evaluation:
        """The mean loss of the windows, and the exact match and F1 of the answers decoded from all of them (the
        windows' batches reported to `progress`)."""
        windows = len(part)
        starts: list[np.ndarray] = [np.empty(0, dtype=np.float32)] * windows
        ends: list[np.ndarray] = [np.empty(0, dtype=np.float32)] * windows
        loss_sum = 0.0
        order = np.argsort([len(ids) for ids in part.ids], kind="stable")
        for first in range(0, windows, batch_size):
            if progress is not None:
                progress(first, windows)
            batch = order[first : first + batch_size]
            ids, mask, types, targets = self.batch(part, batch, pad_id, device)
            logits = model(ids, mask, types).float()
            loss_sum += float(self.loss(logits, targets)[0]) * len(batch)
            logits = logits.cpu().numpy()
            for row, i in enumerate(batch):
                n = len(part.ids[i])
                starts[i], ends[i] = logits[row, :n, 0], logits[row, :n, 1]
        answers = best_answers(
            part.examples,
            part.features,
            starts,
            ends,
            max_answer_length=self.max_answer_length,
            allow_impossible=self.allow_impossible,
        )
        scores = squad_scores(part.examples, [found[0].text if found else "" for found in answers])
        measures = {
            "accuracy": None,
            "macro_f1": None,
            "exact_match": scores.exact / 100,
            "f1": scores.f1 / 100,
            "has_answer_exact_match": _share(scores.has_answer_exact) if self.allow_impossible else None,
            "has_answer_f1": _share(scores.has_answer_f1) if self.allow_impossible else None,
            "no_answer_exact_match": _share(scores.no_answer_exact) if self.allow_impossible else None,
        }
        return Evaluation(loss_sum / max(windows, 1), measures, scores.f1 / 100, NO_DETAILS)


def _share(percentage: float | None) -> float | None:
    return None if percentage is None else percentage / 100
