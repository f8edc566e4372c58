"""Does the pre-training help a real task? A linear classifier on the model's frozen sentence vectors (the mean
of a layer's output over a text's tokens, the last by default), trained and scored on a fixed stratified split
of a labelled file (read by fine-tuning's reader), beside two references on the same split: always the majority
class, and a bag-of-words classifier (TF-IDF and logistic regression). On the same split, how often a held-out
text's nearest training texts share its label (search's recall@k and MRR), by the model's vectors and by the bag
of words. scikit-learn does the standard parts."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from mlm_studio.core.data.labelled import Columns, LabelledFile, TaskError, check_labels, read_labelled_file
from mlm_studio.core.data.rows import clipped
from mlm_studio.core.data.tokenizer import MLMTokenizer
from mlm_studio.core.evaluation.search import RetrievalScores, distinct_texts, neighbour_ranks
from mlm_studio.core.evaluation.vectors import MAX_TEXT_CHARS, sentence_vectors
from mlm_studio.core.progress import Progress


@dataclass(frozen=True)
class TaskResult:
    """The probe's scores on the held-out texts; the retrieval scores say how often a held-out text's nearest
    training texts by cosine (of the model's vectors, or of the bag of words) share its label."""

    examples: int
    accuracy: float
    macro_f1: float
    majority_accuracy: float
    bag_of_words_accuracy: float
    recall_at_1: float
    recall_at_5: float
    mrr: float
    bag_of_words_recall_at_1: float
    bag_of_words_recall_at_5: float
    bag_of_words_mrr: float
    repeated: int = 0  # texts that repeat another (spacing aside), read once: a copy is never on both sides

    @property
    def repeated_note(self) -> str:
        """What was read once, in words ("" when no text repeats)."""
        if not self.repeated:
            return ""
        return (
            f"{self.repeated:,} texts repeat another and were read once ({self.examples:,} distinct texts probed), "
            "so no held-out text has its copy among the training texts"
        )

    def to_json(self) -> dict:
        return dict(self.__dict__)


PROBE_TEXTS = 20_000  # distinct texts a probe reads at most: a fixed sample of a larger file's


def read_task(
    path: str | Path, text_column: str = "text", label_column: str = "label", progress: Progress | None = None
) -> LabelledFile:
    """A labelled file as the probe reads it, through fine-tuning's reader: each text up to `MAX_TEXT_CHARS` (as
    much as the model reads), of a larger file a fixed sample of `PROBE_TEXTS` distinct texts (memory and time
    bounded whatever its size: `sample_note` says so), at least two labels and two texts of each (its stratified
    split needs them; of a sample, the labels with a single text in it are left out)."""
    columns = Columns(text_column, label_column)
    file = read_labelled_file(path, "classification", columns, MAX_TEXT_CHARS, progress, PROBE_TEXTS)
    counts = file.label_counts()
    alone = [label for label, count in counts.items() if count == 1]
    read_once = file.sampled_from or (file.repeats is not None and file.repeats.rows)
    if alone and read_once and len(counts) - len(alone) >= 2:  # its other texts left out as copies or unsampled
        left_out = set(alone)
        for example in file.examples:
            if example.labels[0] in left_out:
                file.issues.add(example.row, f"its label '{clipped(example.labels[0], 40)}' has no other text "
                                "once repeated texts are read once", "row")  # fmt: skip
        file, alone = replace(file, examples=[e for e in file.examples if e.labels[0] not in left_out]), []
    check_labels(file)
    if alone:
        within = (
            f" in a sample of {len(file.examples):,} of its {file.sampled_from:,} texts" if file.sampled_from else ""
        )
        raise TaskError(
            f"{file.path.name}: {len(alone):,} of the {len(counts):,} labels{within} have a single text (such as "
            f"{clipped(', '.join(repr(clipped(label, 20)) for label in alone[:3]))}); give each label at least two"
        )
    return file


def sample_note(file: LabelledFile) -> str:
    """What of a file the probe reads, in words: its repeated texts, read once (those with more than one label
    named), and the sample of a large file ("" when it reads every row once)."""
    notes = [file.repeats.note(file.path.name)] if file.repeats is not None and file.repeats.rows else []
    if file.sampled_from:
        notes.append(
            f"{file.path.name}: probed a fixed sample of {len(file.examples):,} of its {file.sampled_from:,} labelled "
            f"texts (distinct ones, at most {PROBE_TEXTS:,}, the same on every run; a label with a single text in it "
            "left out), so that time and memory stay bounded"
        )
    return ". ".join(notes)


def probe_task(
    model: torch.nn.Module,
    tokenizer: MLMTokenizer,
    texts: list[str],
    labels: list[str],
    layer: int | None = None,
    seed: int = 0,
    test_fraction: float = 0.25,
    progress=None,
    read_once: int = 0,
) -> TaskResult:
    """Accuracy and macro-F1 of a logistic regression on the model's sentence vectors, and the two references,
    on one stratified split of the distinct texts decided by `seed` (a repeated text, as the tokenizer reads it, is
    read once, under the label of its first copy); and on the same split, recall@1, recall@5 and MRR of each held-out
    text's nearest training texts by the model's vectors and by the bag of words. `read_once`: the repeated texts the
    file's reader already read once, counted with those found here."""
    from sklearn.dummy import DummyClassifier
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import accuracy_score, f1_score
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    texts, labels, repeated = distinct_texts(texts, labels, tokenizer.normalised)
    classes, held_out = len(set(labels)), int(np.ceil(len(texts) * test_fraction))
    if held_out < classes:
        raise TaskError(
            f"{classes:,} labels for {len(texts):,} texts: the test split ({held_out:,} texts) cannot hold one text of "
            "each label; give more texts per label"
        )
    try:
        train, test = train_test_split(
            np.arange(len(texts)), test_size=test_fraction, random_state=seed, stratify=labels
        )
    except ValueError as exc:
        raise TaskError(f"the labelled texts cannot be split ({clipped(str(exc), 200)})") from None
    y = np.asarray(labels)
    vectors = sentence_vectors(model, tokenizer, texts, layer, progress=progress)
    stage = _stages(progress)  # what follows the reading takes a minute on 20,000 texts: each step is said
    stage("Fitting a logistic regression on the model's vectors")
    linear = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
    predicted = linear.fit(vectors[train], y[train]).predict(vectors[test])
    majority = DummyClassifier(strategy="most_frequent").fit(vectors[train], y[train]).predict(vectors[test])
    stage("Fitting the bag-of-words reference")
    words = make_pipeline(TfidfVectorizer(), LogisticRegression(max_iter=2000))
    try:
        words.fit([texts[i] for i in train], y[train])
    except ValueError as exc:
        if "empty vocabulary" not in str(exc):  # TF-IDF's word for texts without a word of two letters or digits
            raise
        raise TaskError(
            f"the training texts hold no words for the bag-of-words reference ({clipped(str(exc))}); give texts "
            "with words of two or more letters or digits"
        ) from None
    bag = words.predict([texts[i] for i in test])
    counts = words[0].transform(texts)  # each text's TF-IDF, of the training texts' words
    stage("Ranking the held-out texts' neighbours")
    return TaskResult(
        len(texts),
        float(accuracy_score(y[test], predicted)),
        float(f1_score(y[test], predicted, average="macro")),
        float(accuracy_score(y[test], majority)),
        float(accuracy_score(y[test], bag)),
        *_neighbours(vectors, y, train, test),
        *_neighbours(counts, y, train, test),
        repeated + read_once,
    )


PROBE_STAGES = 3  # the steps after the reading: the probe, the bag of words, the neighbours


def _stages(progress):
    """A function that says the next of the `PROBE_STAGES` steps (and stops there when the work is cancelled)."""
    done = iter(range(PROBE_STAGES))

    def stage(message: str) -> None:
        if progress is not None:
            progress.check()
            progress.report(next(done), PROBE_STAGES, message)

    return stage


def _neighbours(vectors, labels: np.ndarray, train: np.ndarray, test: np.ndarray) -> tuple[float, float, float]:
    """Recall@1, recall@5 and MRR of the held-out texts' same-label neighbours among the training texts."""
    ranks = neighbour_ranks(vectors[test], labels[test], among=(vectors[train], labels[train]))
    first, fifth = RetrievalScores.of(ranks, 1), RetrievalScores.of(ranks, 5)
    return first.recall_at_k, fifth.recall_at_k, first.mrr
