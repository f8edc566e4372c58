"""A fine-tuned model answering: the label of each text with its probability, or the tag of each word (read on
its first piece, as it is scored); and, for a text typed in, its answers in the shapes of `transformers`' pipelines
(pipeline_shapes.py), with how much of the text (or the question) it read. It reads the run's best weights (its
latest checkpoint before any evaluation)."""

from __future__ import annotations

from pathlib import Path

import torch

from mlm_studio.core.data.labelled import TaskError, pair_column
from mlm_studio.core.finetune.examples import encode_texts, first_pieces, lay_out, word_pieces
from mlm_studio.core.finetune.heads import TaskModel
from mlm_studio.core.finetune.pipeline_shapes import (
    Answered,
    Labelled,
    Tagged,
    label_scores,
    piece_entities,
    question_reading,
    reading,
    tagged_tokens,
    word_entities,
    word_groups,
    word_tags,
)
from mlm_studio.core.finetune.qa.data import QAExample
from mlm_studio.core.finetune.qa.decoding import best_answers
from mlm_studio.core.finetune.qa.features import qa_features
from mlm_studio.core.finetune.qa.task import question_room
from mlm_studio.core.finetune.tuner import BEST
from mlm_studio.core.progress import Progress
from mlm_studio.core.runs.run_folder import TASK, RunDir
from mlm_studio.core.shown import shown
from mlm_studio.core.storage.checkpoint import CheckpointError, load_weights, weights_finite

ANSWER_BATCH = 16  # windows of a long context read at once


class FineTuned:
    """A fine-tuning run's model, its tokenizer and labels."""

    def __init__(self, run: RunDir, weights: Path | None = None) -> None:
        """`weights`: a checkpoint folder of the run; by default its best weights."""
        task = run.task
        if task is None:
            raise CheckpointError(f"{run.name} is not a fine-tuning run (it has no {TASK})")
        self.run, self.task, self.labels, self.limit = run, task, list(task.labels), run.config.data.max_seq_len
        self.tokenizer = run.tokenizer
        self.model = TaskModel(run.config.model, task.kind, len(self.labels), task.pooling).eval()
        self.weights = weights or self.best_weights(run)
        load_weights(self.weights, self.model)
        if not weights_finite(self.model.state_dict().values()):
            raise CheckpointError(
                f"{run.name} / {self.weights.name}: the weights hold values that are not finite numbers; every answer "
                "computed from them would be meaningless. Fine-tune the run again"
            )

    @staticmethod
    def best_weights(run: RunDir) -> Path:
        best = run.path / BEST
        if (best / "model.safetensors").is_file():
            return best
        latest = run.latest_checkpoint()
        if latest is None:
            raise CheckpointError(f"run {run.name} has no weights yet; fine-tune it first")
        return latest

    @torch.no_grad()
    def classify(self, texts: list[str | tuple[str, str]]) -> list[tuple[str, float]]:
        """Each text's (or pair of texts') most probable label and its probability."""
        answers = []
        for text in texts:
            ids, types, _ = encode_texts(self.tokenizer, (text,) if isinstance(text, str) else tuple(text), self.limit)
            probabilities = self.model(torch.tensor([ids]), None, torch.tensor([types])).softmax(-1)[0]
            best = int(probabilities.argmax())
            answers.append((self.labels[best], float(probabilities[best])))
        return answers

    @torch.no_grad()
    def tag(self, words: list[str]) -> list[str]:
        """Each word's tag ("" for a word past the model's length or of no piece)."""
        pieces, word_of = word_pieces(self.tokenizer, tuple(words))
        ids = torch.tensor([[self.tokenizer.cls_id, *pieces[: self.limit - 2], self.tokenizer.sep_id]])
        predicted = self.model(ids)[0, 1:-1].argmax(-1).tolist()
        tags = [""] * len(words)
        for word, first, label in zip(word_of, first_pieces(word_of), predicted, strict=False):
            if first:
                tags[word] = self.labels[label]
        return tags

    def answer(
        self,
        question: str,
        context: str,
        top_k: int = 1,
        handle_impossible_answer: bool | None = None,
        progress: Progress | None = None,
    ) -> list[dict]:
        """The `top_k` best answers to `question` in `context` as `transformers`' question-answering pipeline gives
        them ({"score", "start", "end", "answer"}, best first): the context read in windows overlapping by the
        run's document stride, answers of at most its longest answer's tokens widened to whole words, a span found
        in two windows given once; "no answer" ("" at 0) among them with `handle_impossible_answer`, by default
        when the run learned unanswerable questions (SQuAD v2.0), as its scores were measured."""
        return self.answer_text(question, context, top_k, handle_impossible_answer, progress).answers

    @torch.no_grad()
    def answer_text(
        self,
        question: str,
        context: str,
        top_k: int = 1,
        handle_impossible_answer: bool | None = None,
        progress: Progress | None = None,
    ) -> Answered:
        """The answers of `answer`, and how much of the question the model read: at most the tokens it was
        trained to read of one (a longer question is cut, as in training)."""
        task = self.task
        if handle_impossible_answer is None:
            handle_impossible_answer = task.unanswerable
        if task.kind != "qa":
            raise TaskError(f"{self.run.name} was fine-tuned for {task.kind}, not question answering")
        if not question.strip() or not context.strip():
            raise TaskError("give a question and the context its answer is in")
        example = QAExample("question", question.strip(), context, (), 0)
        room = question_room(self.limit)
        read = question_reading(self.tokenizer, example.question, room)
        features = qa_features(self.tokenizer, [example], self.limit, task.doc_stride, room)
        for what, text, tokens in (
            ("question", question, read.tokens),
            ("context", context, sum(int((spans[:, 0] >= 0).sum()) for spans in features.spans)),
        ):
            if not tokens:  # only characters the tokenizer drops, such as a zero-width space
                raise TaskError(f"the {what} {shown(text)} holds no character the model reads; type words")
        starts, ends = [], []
        for first in range(0, len(features), ANSWER_BATCH):
            if progress is not None:  # a long context: stopped between windows when no longer wanted
                progress.check()
                progress.report(first, len(features), "Reading the context")
            rows = range(first, min(first + ANSWER_BATCH, len(features)))
            length = max(len(features.ids[i]) for i in rows)
            ids = torch.full((len(rows), length), self.tokenizer.pad_id, dtype=torch.long)
            mask, types = torch.zeros_like(ids), torch.zeros_like(ids)
            for row, i in enumerate(rows):
                n = len(features.ids[i])
                ids[row, :n], mask[row, :n] = torch.from_numpy(features.ids[i]), 1
                types[row, :n] = torch.from_numpy(features.types[i])
            logits = self.model(ids, mask, types).float().numpy()  # (B, L, 2)
            starts += [logits[row, :, 0] for row in range(len(rows))]
            ends += [logits[row, :, 1] for row in range(len(rows))]
        found = best_answers(
            [example],
            features,
            starts,
            ends,
            max_answer_length=task.max_answer_length,
            allow_impossible=handle_impossible_answer,
            top_k=top_k,
        )[0]
        answers = [answer.as_pipeline() for answer in found]
        return Answered(answers, read)

    @property
    def kind(self) -> str:
        """What the run was fine-tuned for: "classification", "tokens" (or "qa")."""
        return self.task.kind

    def reads_pairs(self) -> bool | None:
        """Whether a classifier was fine-tuned on pairs of texts (see `reads_pairs`)."""
        return reads_pairs(self.run)

    @torch.no_grad()
    def label_text(self, text: str, pair: str | None = None) -> Labelled:
        """Every label's probability for `text` (and its `pair`), best first, as far as the model's length reads.
        An empty `pair` is none, as the pipeline takes it."""
        texts = (text, pair) if pair else (text,)
        encoding, cut = lay_out(self.tokenizer, texts, self.limit)
        ids, types = (torch.tensor([values], device=self._device) for values in (encoding.ids, encoding.type_ids))
        probabilities = self.model(ids, None, types).float().softmax(-1)[0]  # (labels,)
        return Labelled(label_scores(probabilities.tolist(), self.labels), reading(encoding, texts, cut, self.limit))

    @torch.no_grad()
    def tag_text(self, text: str) -> Tagged:
        """The tags of a text as written (not split into words first): every token's, every word's and the
        entities (its words grouped, each tagged as its first piece is; and its pieces grouped by their own tags),
        as far as the model's length reads."""
        encoding, cut = lay_out(self.tokenizer, (text,), self.limit)
        ids = torch.tensor([encoding.ids], device=self._device)
        probabilities = self.model(ids).float().softmax(-1)[0].cpu().numpy()  # (L, labels)
        tokens = tagged_tokens(text, encoding, probabilities, self.labels, self.tokenizer)
        words = word_groups(encoding, tokens)
        return Tagged(
            text,
            tokens,
            word_tags(text, words),
            word_entities(text, words, self.tokenizer),
            piece_entities(tokens, self.tokenizer),
            reading(encoding, (text,), cut, self.limit),
        )

    @property
    def _device(self) -> torch.device:
        return next(self.model.parameters()).device


def reads_pairs(run: RunDir) -> bool | None:
    """Whether a fine-tuning run is a classifier of pairs of texts, as its training file's columns say (read from
    its header; None when the file can no longer be read)."""
    task = run.task
    if task is None or task.kind != "classification":
        return False
    try:
        return bool(pair_column(task.train, task.columns))
    except (TaskError, OSError):
        return None


def fine_tuned_at(path: str | Path) -> FineTuned | None:
    """The fine-tuned model at `path`: a fine-tuning run (its best weights), its `best/` folder or one of its
    checkpoint folders (those weights); None when `path` is none of these."""
    folder = Path(path)
    if (folder / TASK).is_file():
        return FineTuned(RunDir(folder))
    if (folder / "model.safetensors").is_file():
        for run in (folder.parent, folder.parent.parent):  # best/, or checkpoints/step-…
            if (run / TASK).is_file():
                return FineTuned(RunDir(run), folder)
    return None
