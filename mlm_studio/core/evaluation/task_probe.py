"""Does the pre-training help a real task? A linear classifier on the model's frozen sentence vectors (the mean
of a layer's output over a text's tokens, the last by default), trained and scored on a fixed stratified split
of a labelled file (read as a corpus is), beside two references on the same split: always the majority class,
and a bag-of-words classifier (TF-IDF and logistic regression). scikit-learn does the standard parts."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from mlm_studio.core.data.corpus import SourceReport
from mlm_studio.core.data.formats import TABLE_FORMATS, TABLE_KINDS, kind_of, read_decoded, records
from mlm_studio.core.data.rows import IssueLog, SourceSkipped, clipped
from mlm_studio.core.data.tokenizer import MLMTokenizer
from mlm_studio.core.models.encoder import layer_outputs
from mlm_studio.core.progress import Progress

MAX_TOKENS = 128  # each text is read up to this many tokens
MAX_TEXT_CHARS = MAX_TOKENS * 64  # and up to this many characters, ample for those tokens


class TaskError(ValueError):
    """The labelled file cannot be used; the message says why."""


@dataclass(frozen=True)
class TaskResult:
    examples: int
    accuracy: float
    macro_f1: float
    majority_accuracy: float
    bag_of_words_accuracy: float

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class LabelledTexts:
    """The texts and labels of a task file, and what happened reading it (encoding, lines not used)."""

    texts: list[str]
    labels: list[str]
    report: SourceReport


def read_labelled(path: str | Path, text_column: str = "text", label_column: str = "label") -> LabelledTexts:
    """Texts and labels from a table file, read as a corpus is (formats, compression, encodings): a line or row
    that cannot be used (an empty label among them) is reported and the rest kept. A label may be a string or an
    integer; each text is kept up to `MAX_TEXT_CHARS`, as much as the model reads."""
    path = Path(path)
    kind = kind_of(path)
    if kind not in TABLE_KINDS:
        raise TaskError(f"{path.name}: a labelled file is {TABLE_FORMATS}, with a text and a label column")
    if text_column == label_column:
        raise TaskError(f"the text and label columns must differ, not both '{text_column}'")
    columns = {text_column: (str,), label_column: (str, int)}

    def read(encoding: str, strict: bool) -> tuple[list[tuple[str, str]], IssueLog]:
        issues = IssueLog()
        rows = [
            (record[text_column][:MAX_TEXT_CHARS].strip(), str(record[label_column]).strip())
            for record in records(path, kind, encoding, columns, issues, strict, nonempty=(label_column,))
        ]
        return [(text, label) for text, label in rows if text], issues

    try:
        (rows, issues), encoding, note = read_decoded(path, read)
    except SourceSkipped as exc:
        raise TaskError(f"{path.name}: {exc}") from None
    except OSError as exc:
        raise TaskError(f"{path.name}: cannot be read ({exc.strerror or exc})") from None
    if not rows:
        raise TaskError(f"{path.name} has no usable rows" + (f" ({issues.summary()})" if issues.count else ""))
    counts = Counter(label for _, label in rows)
    if len(counts) < 2:
        raise TaskError(f"{path.name} needs at least two labels, not {len(counts)}")
    alone = [label for label, count in counts.items() if count == 1]
    if alone:
        raise TaskError(
            f"{path.name}: {len(alone):,} of its {len(counts):,} labels have a single text (such as "
            f"{clipped(', '.join(repr(clipped(label, 20)) for label in alone[:3]))}); give each label at least two"
        )
    report = SourceReport(path, kind, True, encoding=encoding, encoding_note=note, documents=len(rows),
                          issues=tuple(issues.kept), issue_count=issues.count)  # fmt: skip
    return LabelledTexts([text for text, _ in rows], [label for _, label in rows], report)


@torch.no_grad()
def sentence_vectors(
    model: torch.nn.Module,
    tokenizer: MLMTokenizer,
    texts: list[str],
    layer: int | None = None,
    batch_size: int = 32,
    progress=None,
) -> np.ndarray:
    """(N, H): each text's hidden states averaged over its tokens, at the output of encoder layer `layer` (1 =
    the first), or by default as the head reads them; the model is not changed."""
    progress = progress or Progress()
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    vectors = []
    limit = min(MAX_TOKENS, model.config.max_tokens())
    for start in range(0, len(texts), batch_size):
        progress.check()
        progress.report(start, len(texts), "Reading the texts with the model")
        batch = texts[start : start + batch_size]
        encoded = [tokenizer.encode_text(t[:MAX_TEXT_CHARS])[0][:limit] for t in batch]
        length = max(len(ids) for ids in encoded)
        ids = torch.full((len(encoded), length), tokenizer.pad_id, dtype=torch.long)
        real = torch.zeros((len(encoded), length), dtype=torch.bool)
        for row, tokens in enumerate(encoded):
            ids[row, : len(tokens)] = torch.tensor(tokens)
            real[row, : len(tokens)] = True
        ids, real = ids.to(device), real.to(device)
        if layer is None:
            hidden = model.hidden(ids, real.long()).float()  # (B, L, H)
        else:
            with layer_outputs(model, layer) as captured:
                model.hidden(ids, real.long())
            hidden = captured[0].float()
        mean = (hidden * real[..., None]).sum(1) / real.sum(1, keepdim=True)
        vectors.append(mean.cpu().numpy())
    model.train(was_training)
    return np.concatenate(vectors)


def probe_task(
    model: torch.nn.Module,
    tokenizer: MLMTokenizer,
    texts: list[str],
    labels: list[str],
    layer: int | None = None,
    seed: int = 0,
    test_fraction: float = 0.25,
    progress=None,
) -> TaskResult:
    """Accuracy and macro-F1 of a logistic regression on the model's sentence vectors, and the two references,
    on one stratified split decided by `seed`."""
    from sklearn.dummy import DummyClassifier
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import accuracy_score, f1_score
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

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
    linear = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
    predicted = linear.fit(vectors[train], y[train]).predict(vectors[test])
    majority = DummyClassifier(strategy="most_frequent").fit(vectors[train], y[train]).predict(vectors[test])
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
    return TaskResult(
        examples=len(texts),
        accuracy=float(accuracy_score(y[test], predicted)),
        macro_f1=float(f1_score(y[test], predicted, average="macro")),
        majority_accuracy=float(accuracy_score(y[test], majority)),
        bag_of_words_accuracy=float(accuracy_score(y[test], bag)),
    )
