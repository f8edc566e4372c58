"""Token classification: each word's tag lands on its first piece for every tokenizer kind, CoNLL-2003 files are
read as written, entity scores follow the seqeval convention on hand-worked cases, and a tagger learns a
separable task."""

import json
import random
import string

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlm_studio.core.data.masking import IGNORE_INDEX
from mlm_studio.core.data.tokenizer import MLMTokenizer
from mlm_studio.core.finetune.examples import encode_examples, first_pieces
from mlm_studio.core.finetune.labelled import Example, read_labelled_file
from mlm_studio.core.finetune.scores import class_scores, entities, entity_scores
from mlm_studio.core.finetune.setup import FinetuneOptions, prepare_finetuner
from mlm_studio.core.training.records import TestRecord
from tests.core.family_folders import save_tokenizer

DOCUMENTS = [
    "Return the value of the list, raising ValueError if it is empty.",
    "naïve café résumé 中文 データ über straße",
    "The quick brown fox jumps over the lazy dog; 3.14 + 2 = 5.14!",
] * 30


@pytest.fixture(scope="module", params=["wordpiece", "bpe-roberta", "unigram"])
def tokenizer(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    save_tokenizer(request.param, DOCUMENTS, folder)
    tokenizer = MLMTokenizer.load(folder / "tokenizer.json")
    assert tokenizer.kind == {"wordpiece": "WordPiece", "bpe-roberta": "BPE", "unigram": "Unigram"}[request.param]
    return tokenizer


WORD = st.text(
    alphabet=st.sampled_from(string.ascii_letters + string.digits + ".,;!?-'éßü中デ"), min_size=1, max_size=12
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(WORD, min_size=1, max_size=12))
def test_each_word_is_labelled_on_its_first_piece(tokenizer, words):
    ids, word_of = first_pieces(tokenizer, tuple(words))
    encoding = tokenizer.backend.encode(" ".join(words), add_special_tokens=False)
    assert ids == encoding.ids
    starts = np.cumsum([0] + [len(w) + 1 for w in words])[:-1]
    labelled = [w for w in word_of if w >= 0]
    assert labelled == sorted(set(labelled))  # each word at most once, in order
    for word, (begin, end) in enumerate(zip(starts, starts + [len(w) for w in words], strict=True)):
        overlapping = [i for i, (b, e) in enumerate(encoding.offsets) if e > b and b < end and e > begin]
        if overlapping:  # the word's first piece carries its tag, no other piece does
            assert word_of[overlapping[0]] == word
            assert all(word_of[i] == -1 for i in overlapping[1:])
        else:
            assert word not in labelled
    tags = {f"T{i}": i for i in range(len(words))}
    encoded = encode_examples(tokenizer, [Example(1, tuple(words), tuple(tags))], tags, "tokens", 10_000)
    labels = encoded.labels[0]
    assert labels[0] == labels[-1] == IGNORE_INDEX  # [CLS] and [SEP]
    assert [int(t) for t in labels if t != IGNORE_INDEX] == labelled


def test_conll_files_are_read_as_written(tmp_path):
    path = tmp_path / "train.conll"
    path.write_text(
        "-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\nGerman JJ B-NP B-MISC\n\n\n"
        "Peter NNP B-NP B-PER\nBlackburn NNP I-NP I-PER\n"
    )
    file = read_labelled_file(path, "tokens")
    assert file.examples == [
        Example(3, ("EU", "rejects", "German"), ("B-ORG", "O", "B-MISC")),
        Example(8, ("Peter", "Blackburn"), ("B-PER", "I-PER")),
    ]


def test_a_conll_line_without_a_tag_is_named(tmp_path):
    from mlm_studio.core.finetune.labelled import TaskError

    path = tmp_path / "bad.conll"
    path.write_text("EU B-ORG\nrejects\n")
    with pytest.raises(TaskError, match=r"bad.conll, line 2: 'rejects' has a word but no tag"):
        read_labelled_file(path, "tokens")


@pytest.mark.parametrize(
    ("tags", "spans"),
    [
        (["B-PER", "I-PER", "O", "B-LOC"], [("PER", 0, 1), ("LOC", 3, 3)]),
        (["I-PER", "I-PER", "O"], [("PER", 0, 1)]),  # I- after O opens an entity
        (["B-PER", "I-LOC", "I-LOC"], [("PER", 0, 0), ("LOC", 1, 2)]),  # another type opens one
        (["B-PER", "B-PER"], [("PER", 0, 0), ("PER", 1, 1)]),
        (["B-X", "E-X", "E-X", "S-Y"], [("X", 0, 1), ("X", 2, 2), ("Y", 3, 3)]),  # BIOES
        (["O", "O"], []),
    ],
)
def test_entities_follow_the_seqeval_convention(tags, spans):
    assert entities(tags) == spans


def test_entity_scores_by_hand():
    true = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O"]]
    predicted = [["B-PER", "I-PER", "O", "O"], ["B-ORG", "B-LOC"]]
    # true: PER(0-1), LOC(3), ORG(0); predicted: PER(0-1), ORG(0), LOC(1): 2 right of 3 found, of 3 expected
    precision, recall, f1 = entity_scores(true, predicted)
    assert (precision, recall, f1) == pytest.approx((2 / 3, 2 / 3, 2 / 3))
    # a span with the right type but the wrong end does not count
    assert entity_scores([["B-PER", "I-PER"]], [["B-PER", "O"]]) == (0.0, 0.0, 0.0)


def test_class_scores_by_hand():
    scores = class_scores(np.array([0, 0, 1, 1, 2]), np.array([0, 1, 1, 1, 0]), ["a", "b", "c"])
    assert scores.accuracy == pytest.approx(3 / 5)
    assert scores.confusion == ((1, 1, 0), (0, 2, 0), (1, 0, 0))
    a, b, c = scores.per_class
    assert (a.precision, a.recall, a.f1, a.support) == pytest.approx((1 / 2, 1 / 2, 1 / 2, 2))
    assert (b.precision, b.recall, b.f1) == pytest.approx((2 / 3, 1, 0.8))
    assert (c.precision, c.recall, c.f1) == (0.0, 0.0, 0.0)
    assert scores.macro_f1 == pytest.approx((0.5 + 0.8 + 0.0) / 3)


def write_tagging(path, sentences=120, seed=0):
    """Sentences where `file` and `path` are always B-ARG, `error` B-EXC followed by I-EXC `value`."""
    rng = random.Random(seed)
    rows = []
    for _ in range(sentences):
        words, tags = [], []
        for _ in range(rng.randint(3, 8)):
            choice = rng.random()
            if choice < 0.2:
                words.append(rng.choice(["file", "path"]))
                tags.append("B-ARG")
            elif choice < 0.35:
                words += ["error", "value"]
                tags += ["B-EXC", "I-EXC"]
            else:
                words.append(rng.choice(["the", "of", "a", "list", "to", "is"]))
                tags.append("O")
        rows.append({"tokens": words, "tags": tags})
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    return path


@pytest.mark.slow  # fine-tuning for several epochs
def test_a_tagger_learns_entities(trained_run, tmp_path):
    path = write_tagging(tmp_path / "tags.jsonl")
    options = FinetuneOptions("tokens", path, learning_rate=5e-3, epochs=8, batch_size=8, patience=8, device="cpu")
    records = list(prepare_finetuner(tmp_path / "ft", str(trained_run.path), options).run())
    test = next(r for r in records if isinstance(r, TestRecord))
    assert test.entity_f1 >= 0.9 and test.accuracy >= 0.9
    assert set(test.labels) == {"O", "B-ARG", "B-EXC", "I-EXC"}
