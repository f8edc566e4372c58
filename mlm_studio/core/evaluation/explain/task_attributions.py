"""Why a fine-tuned model gave a text its label, or a word its tag: each word's attribution to that label's
logit (gradient × input, integrated gradients) or probability (occlusion), as for a masked-LM's prediction."""

from __future__ import annotations

import torch

from mlm_studio.core.evaluation.explain.attributions import Attribution, Explainer, ExplainError
from mlm_studio.core.evaluation.explain.choices import DEFAULT_METHOD, DEFAULT_STEPS
from mlm_studio.core.finetune.predict import FineTuned
from mlm_studio.core.shown import shown


class TaskExplainer(Explainer):
    """A fine-tuning run's classifier or tagger, ready to explain its labels (question answering is not)."""

    def __init__(self, tuned: FineTuned) -> None:
        if tuned.kind not in ("classification", "tokens"):
            raise ExplainError(
                f"{tuned.run.name} answers questions; its answers are not explained yet, only labels and tags"
            )
        super().__init__(tuned.model, tuned.tokenizer, f"{tuned.run.name} / {tuned.weights.name}")
        self.labels = tuned.labels
        self.kind = tuned.kind
        self.pairs = tuned.reads_pairs()

    def explain(
        self,
        text: str,
        candidate: int | str | None = None,
        mask: int = 0,
        method: str = DEFAULT_METHOD,
        steps: int = DEFAULT_STEPS,
        baseline: str = "mask",
    ) -> Attribution:
        """Attribute the label `candidate` (its name or number; by default the most probable) of `text`, or for a
        tagger of its word number `mask` (0: the first), to the text's words."""
        if self.pairs:
            raise ExplainError(f"{self.source} reads pairs of texts; explaining a pair's label is not supported yet")
        words = self.read(text)
        if self.kind == "classification":
            return self._attribute(words, 0, mask, candidate, method, steps, baseline)
        if not 0 <= mask < len(words.texts):
            raise ExplainError(f"the text has {len(words.texts)} words; there is no word number {mask + 1} to explain")
        return self._attribute(words, words.pieces_of(mask)[0], mask, candidate, method, steps, baseline)

    def _outputs(self, ids: torch.Tensor, attention_mask: torch.Tensor | None, where: torch.Tensor) -> torch.Tensor:
        """(B, labels) logits: the text's, or at each row's piece `where` for a tagger."""
        logits = self.model(ids, attention_mask)
        return logits if self.kind == "classification" else logits[torch.arange(len(ids), device=ids.device), where]

    def _label_name(self, label: int) -> str:
        return self.labels[label]

    def _candidate_id(self, candidate: int | str) -> int:
        if isinstance(candidate, str):
            if candidate not in self.labels:
                raise ExplainError(
                    f"{shown(candidate)} is not a label of {self.source}; its labels: {shown(self.labels)}"
                )
            return self.labels.index(candidate)
        if not 0 <= candidate < len(self.labels):
            raise ExplainError(f"{self.source} has {len(self.labels)} labels; there is no label {candidate}")
        return int(candidate)
