"""Token classification: each word's tag lands on its first piece and its I- form on its later pieces for every
tokenizer kind, CoNLL-2003 files are read as written, entity scores follow the seqeval convention on hand-worked
cases, tags that are not entity tags are scored as plain labels, and a tagger learns a separable task."""

import json
import random
import string

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlm_studio.core.data.labelled import Example, read_labelled_file
from mlm_studio.core.data.masking import IGNORE_INDEX
from mlm_studio.core.data.tokenizer import MLMTokenizer
from mlm_studio.core.finetune.compare import Contender, Said, outcomes, score_name
from mlm_studio.core.finetune.examples import continuing, encode_examples, first_pieces, word_pieces
from mlm_studio.core.finetune.options import FinetuneOptions
from mlm_studio.core.finetune.pipeline_shapes import tagged_tokens, word_groups, word_tags
from mlm_studio.core.finetune.scores import (
    ENTITY_F1,
    MACRO_F1,
    class_scores,
    entities,
    entity_scores,
    entity_tags,
    main_score_name,
    tag_scores,
)
from mlm_studio.core.finetune.setup import prepare_finetuner
from mlm_studio.core.runs.records import StartedRecord, TestRecord, ValidationRecord
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


TAGS = {"B-X": 0, "I-X": 1, "O": 2, "NOUN": 3, "B-Y": 4}  # B-Y without I-Y: its later pieces learn B-Y
LATER = {"B-X": "I-X", "I-X": "I-X", "O": "O", "NOUN": "NOUN", "B-Y": "B-Y"}


def test_later_pieces_learn_the_inside_form_of_the_tag():
    assert {tag: continuing(tag, TAGS) for tag in TAGS} == LATER


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(WORD, min_size=1, max_size=12), seed=st.integers(0, 1000))
def test_each_word_is_scored_on_its_first_piece_and_learned_on_all(tokenizer, words, seed):
    ids, word_of = word_pieces(tokenizer, tuple(words))
    encoding = tokenizer.backend.encode(" ".join(words), add_special_tokens=False)
    assert ids == encoding.ids
    first = first_pieces(word_of)
    starts = np.cumsum([0] + [len(w) + 1 for w in words])[:-1]
    for word, (begin, end) in enumerate(zip(starts, starts + [len(w) for w in words], strict=True)):
        overlapping = [i for i, (b, e) in enumerate(encoding.offsets) if e > b and b < end and e > begin]
        assert [i for i, w in enumerate(word_of) if w == word] == overlapping  # every piece of the word, no other
        assert [i for i in overlapping if first[i]] == overlapping[:1]  # its first piece alone is scored
    tags = random.Random(seed).choices(sorted(TAGS), k=len(words))
    encoded = encode_examples(tokenizer, [Example(1, tuple(words), tuple(tags))], TAGS, "tokens", 10_000)
    labels, scored = encoded.labels[0], encoded.scored[0]
    assert labels[0] == labels[-1] == IGNORE_INDEX  # [CLS] and [SEP]
    expected = [IGNORE_INDEX if w < 0 else TAGS[tags[w]] if f else TAGS[LATER[tags[w]]] for w, f in zip(word_of, first)]
    assert labels[1:-1].tolist() == expected
    assert labels[scored].tolist() == [TAGS[tags[w]] for w, f in zip(word_of, first) if f]


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(st.text(alphabet=string.ascii_letters + "éßü", min_size=1, max_size=12), min_size=1, max_size=8))
def test_a_text_as_written_tags_each_word_on_the_piece_it_was_scored_on(tokenizer, words):
    """A text tagged as written (predict, Try it, --json: `tag_text`) reads each word's tag on the piece training
    scores it on, never on a piece of white space alone before it (a byte-level or Unigram tokenizer's lone Ġ or ▁,
    which training leaves out): every piece says FIRST where training scores a word, OTHER elsewhere."""
    text = " ".join(words)
    scored = iter(first_pieces(word_pieces(tokenizer, tuple(words))[1]))
    encoding = tokenizer.backend.encode(text)
    probabilities = np.array([[0.0, 1.0] if special or not next(scored) else [1.0, 0.0]
                              for special in encoding.special_tokens_mask])  # fmt: skip
    tokens = tagged_tokens(text, encoding, probabilities, ["FIRST", "OTHER"], tokenizer)
    tagged = word_tags(text, word_groups(encoding, tokens))
    assert [(w["word"], w["entity"]) for w in tagged] == [(word, "FIRST") for word in words]


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
    from mlm_studio.core.data.labelled import TaskError

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
    assert set(test.labels) == {"O", "B-ARG", "B-EXC", "I-EXC", "I-ARG"}  # I-ARG added, for later pieces


# each entity two made-up words that a small vocabulary splits into several pieces: a first (B-) and a second (I-),
# each type's words of its own letters, each kind of word with its own first letter
ENTITY_WORDS = {
    "PER": (["zyxxy", "zxyzx"], ["wyzzy", "wxxyz"]),
    "LOC": (["kjqqj", "kqjjq"], ["qjkkj", "qqjkq"]),
}


def write_piece_tagging(path, sentences=120, seed=0, inside=True):
    """Sentences of common words (O) and entities of `ENTITY_WORDS`, tagged B-/I- by type: each word's tag is told
    by the word alone. Without `inside`, each entity is one word tagged B- (the task has no I- tags)."""
    rng = random.Random(seed)
    rows = []
    for _ in range(sentences):
        words, tags = [], []
        for _ in range(rng.randint(2, 5)):
            words.append(rng.choice(["the", "of", "a", "list", "to", "is"]))
            tags.append("O")
            if rng.random() < 0.5:
                kind = rng.choice(sorted(ENTITY_WORDS))
                parts = ENTITY_WORDS[kind] if inside else ENTITY_WORDS[kind][:1]
                words += [rng.choice(choices) for choices in parts]
                tags += [f"B-{kind}", f"I-{kind}"][: len(parts)]
        rows.append({"tokens": words, "tags": tags})
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("labels", "entity"),
    [
        (["O", "B-PER", "I-PER"], True),
        (["O", "B-X", "E-X", "S-Y"], True),  # BIOES
        (["0", "1", "2"], False),  # integer tags
        (["NOUN", "VERB", "DET"], False),  # parts of speech
        (["O", "B-PER", "NOUN"], False),  # one plain tag makes all plain
        (["O", "B-"], False),  # a prefix without a type
    ],
)
def test_entity_tags_are_told_from_plain_tags(labels, entity):
    assert entity_tags(labels) is entity
    assert main_score_name("tokens", labels) == (ENTITY_F1 if entity else MACRO_F1)
    assert main_score_name("classification", labels) == MACRO_F1


def test_plain_tags_are_scored_as_labels_not_entities():
    labels = ["0", "1", "2"]
    true, predicted = [["1", "1", "0"], ["2", "0"]], [["1", "2", "0"], ["2", "0"]]
    scores = tag_scores(true, predicted, labels)
    assert (scores.entity_precision, scores.entity_recall, scores.entity_f1) == (None, None, None)
    assert scores.accuracy == pytest.approx(4 / 5)
    assert scores.macro_f1 == pytest.approx((1 + 2 / 3 + 2 / 3) / 3)  # "0": 1; "1": P 1 R 1/2; "2": P 1/2 R 1
    entity = tag_scores([["B-A", "I-A"]], [["B-A", "O"]], ["O", "B-A", "I-A"])
    assert entity.entity_f1 == 0.0 and entity.accuracy == pytest.approx(1 / 2)


def _test_record(macro_f1, entity_f1):
    measured = dict(tokens_seen=0, elapsed=1.0, epoch=1.0, loss=0.5, accuracy=0.9, macro_f1=macro_f1)
    return TestRecord(
        10, **measured, best_step=10, labels=("O", "B-A"), per_class=(), confusion=(), entity_f1=entity_f1
    )


def test_a_comparison_weighs_the_score_its_runs_chose_checkpoints_by():
    contender = Contender("your model", "run")
    plain = outcomes([Said(contender, 0, _test_record(0.7, None)), Said(contender, 1, _test_record(0.8, None))])
    assert plain[0].score == [0.7, 0.8] and score_name(plain) == MACRO_F1
    entity = outcomes([Said(contender, 0, _test_record(0.7, 0.4))])
    assert entity[0].score == [0.4] and score_name(entity) == ENTITY_F1


def test_plain_tags_choose_the_best_checkpoint_by_macro_f1(trained_run, tmp_path):
    """Integer tags (0, 1, 2 for O, B-ARG, …): no entity scores anywhere, the start line says macro-F1, and the best
    checkpoint is the validation with the highest macro-F1."""
    source = write_tagging(tmp_path / "entities.jsonl", sentences=60)
    number = {"O": "0", "B-ARG": "1", "B-EXC": "2", "I-EXC": "3"}
    rows = [json.loads(line) for line in source.read_text().splitlines()]
    path = tmp_path / "numbers.jsonl"
    path.write_text("\n".join(json.dumps({**r, "tags": [number[t] for t in r["tags"]]}) for r in rows))
    options = FinetuneOptions("tokens", path, learning_rate=5e-3, epochs=3, batch_size=8, patience=8, device="cpu")
    records = list(prepare_finetuner(tmp_path / "ft", str(trained_run.path), options).run())
    started = next(r for r in records if isinstance(r, StartedRecord))
    assert started.score == MACRO_F1 and "the best checkpoint chosen by validation macro-F1" in started.describe()
    validations = [r for r in records if isinstance(r, ValidationRecord)]
    test = next(r for r in records if isinstance(r, TestRecord))
    assert len(validations) == 3 and all(r.entity_f1 is None for r in [*validations, test])
    best = max(validations, key=lambda r: r.macro_f1)  # the first of the highest
    assert test.best_step == best.step
    assert "entities" not in test.describe() and f"macro-F1 {test.macro_f1:.1%}" in test.describe()
