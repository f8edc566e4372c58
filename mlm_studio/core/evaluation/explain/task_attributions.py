"""Why a fine-tuned model gave a text its label, a pair of texts its label, or a word its tag: each word's
attribution to that label's logit (gradient × input, integrated gradients) or probability (occlusion), as for a
masked-LM's prediction; a pair's words each in its own text."""

from __future__ import annotations

import torch

from mlm_studio.core.evaluation.explain.attributions import Attribution, Explainer, ExplainError, check_choices
from mlm_studio.core.evaluation.explain.choices import DEFAULT_METHOD, DEFAULT_STEPS
from mlm_studio.core.evaluation.explain.two_texts import TwoTextAttribution, TwoTexts, laid_out_pair, over_two_texts
from mlm_studio.core.evaluation.explain.words import Words, words_of_encoding
from mlm_studio.core.finetune.predict import FineTuned
from mlm_studio.core.finetune.qa.features import pair_layout
from mlm_studio.core.shown import shown

PAIR_NAMES = ("text", "text2")


class TaskExplainer(Explainer):
    """A fine-tuning run's classifier (of texts or of pairs) or tagger, ready to explain its labels (a
    question-answering run's answers are `AnswerExplainer`'s)."""

    def __init__(self, tuned: FineTuned) -> None:
        if tuned.kind not in ("classification", "tokens"):
            raise ExplainError(f"{tuned.run.name} answers questions: explain an answer with its question and context")
        super().__init__(tuned.model, tuned.tokenizer, f"{tuned.run.name} / {tuned.weights.name}")
        self.labels = tuned.labels
        self.kind = tuned.kind
        self.pairs = tuned.reads_pairs()  # None: its training file is gone, it may read pairs

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
        check_choices(method, steps, baseline)
        if self.pairs:
            raise ExplainError(f"{self.source} reads pairs of texts; give the second text of the pair too")
        words = self.read(text)
        if self.kind == "classification":
            return self._attribute(words, 0, mask, candidate, method, steps, baseline)
        if not 0 <= mask < len(words.texts):
            raise ExplainError(f"the text has {len(words.texts)} words; there is no word number {mask + 1} to explain")
        return self._attribute(words, self._tagged_piece(words, mask), mask, candidate, method, steps, baseline)

    def _tagged_piece(self, words: Words, word: int) -> int:
        """The piece a tagger tags word number `word` on: its first, past a piece of white space alone before it (a
        byte-level or Unigram tokenizer's lone Ġ or ▁), which training leaves out of the word (`word_pieces`)."""
        offsets = self.tokenizer.backend.encode(words.text, add_special_tokens=False).offsets  # ids[1:-1]'s
        pieces = words.pieces_of(word)
        return next((p for p in pieces if words.text[offsets[p - 1][0] : offsets[p - 1][1]].strip()), pieces[0])

    def explain_pair(
        self,
        text: str,
        pair: str,
        candidate: int | str | None = None,
        method: str = DEFAULT_METHOD,
        steps: int = DEFAULT_STEPS,
        baseline: str = "mask",
    ) -> TwoTextAttribution:
        """Attribute a classifier of pairs' label `candidate` (by default the most probable) of `text` and `pair`
        to the words of both, each word in its own text."""
        check_choices(method, steps, baseline)
        if self.kind != "classification" or self.pairs is False:
            raise ExplainError(f"{self.source} was fine-tuned on single texts; explain one text, without a pair")
        words = self.read_pair(text, pair)
        types = words.type_tensor.to(self.device)

        def outputs(ids: torch.Tensor, attention_mask: torch.Tensor | None, where: torch.Tensor) -> torch.Tensor:
            return self.model(ids, attention_mask, types.expand(len(ids), -1))

        explained = self._attribute(words, 0, 0, candidate, method, steps, baseline, outputs)
        return over_two_texts(explained, words, PAIR_NAMES)

    def read_pair(self, text: str, pair: str) -> TwoTexts:
        """The pair's pieces as the classifier reads them and each text's words; refused when a text is empty
        (a classifier of pairs reads both) or the two are longer than the model reads."""
        parts = []
        for name, value in zip(PAIR_NAMES, (text, pair)):
            encoding = self.tokenizer.backend.encode(value, add_special_tokens=False)
            if not encoding.ids:
                raise ExplainError(f"{name} {shown(value)} is empty; a classifier of pairs reads two texts")
            parts.append(words_of_encoding(value, encoding.ids, encoding.word_ids, encoding.offsets))
        words = laid_out_pair(pair_layout(self.tokenizer), *parts)
        limit = self.model.config.max_tokens()
        if len(words.ids) > limit:
            raise ExplainError(f"The pair is {len(words.ids)} tokens long; this model reads at most {limit}.")
        return words

    def read(self, text: str) -> Words:
        if not text.strip():
            raise ExplainError("The text is empty; give the model a text to explain its label of.")
        return super().read(text)

    def _target(self, words: Words, mask: int) -> str:
        if self.kind == "tokens":
            return f"of word {mask + 1} ({shown(words.texts[mask])})" if mask < len(words.texts) else ""
        return "of the pair" if isinstance(words, TwoTexts) else "of the text"

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
