"""A fine-tuned model tried on a text typed in: its answers are those of `transformers`' pipelines on the exported
model (labels and scores within 1e-5 for texts and pairs; tagged tokens and "simple" entities with the same
character offsets for raw text), a text longer than the model reads says how much was read, and the run is found
from its folder, its `best/` or a checkpoint."""

import logging

import pytest

from mlm_studio.core.finetune.options import FinetuneOptions
from mlm_studio.core.finetune.pipeline_shapes import Reading
from mlm_studio.core.finetune.predict import fine_tuned_at
from mlm_studio.core.finetune.setup import prepare_finetuner
from mlm_studio.core.interop.export import export_model
from tests.core.test_finetune import write_task
from tests.core.test_finetune_export import write_pairs
from tests.core.test_finetune_tokens import write_piece_tagging

transformers = pytest.importorskip("transformers")

TEXTS = [
    "return the value of a list",
    "raise an error to the file",
    "",  # nothing typed: the model still reads [CLS] [SEP]
    "  The PATH, of  a file?! 🙂 is… naïve",  # spaces, capitals, punctuation, an unknown character, accents
]
PAIRS = [("return the value", "of a list"), ("the path of a file is", "raise an error"), ("of", "")]
TAGGED = [
    "the zyxxy wyzzy of a list",
    "kjqqj qjkkj is the zxyzx wxxyz.",
    "to kjqqjzyxxy, wyzzy!  the   qqjkq",  # names glued to each other and to punctuation
    "Zyxxy 🙂 wxxyz",
    "",
]


def _run_and_export(trained_run, folder, task, path, epochs):
    options = FinetuneOptions(task, path, learning_rate=5e-3, epochs=epochs, batch_size=8, device="cpu")
    list(prepare_finetuner(folder / "ft", str(trained_run.path), options).run())
    return fine_tuned_at(folder / "ft"), export_model(folder / "ft", folder / "export")


def _pipeline(kind, out, **options):
    return transformers.pipeline(kind, model=str(out), **options)


@pytest.fixture(scope="module")
def classifier(trained_run, tmp_path_factory):
    folder = tmp_path_factory.mktemp("classifier")
    return _run_and_export(trained_run, folder, "classification", write_task(folder / "task.csv", rows=60), 1)


@pytest.fixture(scope="module")
def pair_classifier(trained_run, tmp_path_factory):
    folder = tmp_path_factory.mktemp("pairs")
    return _run_and_export(trained_run, folder, "classification", write_pairs(folder / "pairs.csv"), 1)


@pytest.fixture
def tagger(exported_tagger):
    return exported_tagger


def _same_answers(ours, theirs, text_keys):
    assert [{k: a[k] for k in text_keys} for a in ours] == [{k: a[k] for k in text_keys} for a in theirs]
    assert [a["score"] for a in ours] == pytest.approx([float(a["score"]) for a in theirs], abs=1e-5)


def test_every_label_of_a_text_with_its_score_as_the_pipeline_gives_them(classifier):
    ours, out = classifier
    pipe = _pipeline("text-classification", out)
    for text in TEXTS:
        labelled = ours.label_text(text)
        assert labelled.reading.whole
        _same_answers(labelled.as_pipeline(), pipe(text, top_k=None), ["label"])
        _same_answers(labelled.as_pipeline(top_k=2), pipe(text, top_k=2), ["label"])
        assert sum(a["score"] for a in labelled.scores) == pytest.approx(1.0, abs=1e-6)
    assert ours.kind == "classification" and ours.reads_pairs() is False


def test_a_pair_is_labelled_as_the_pipeline_labels_it(pair_classifier):
    ours, out = pair_classifier
    pipe = _pipeline("text-classification", out)
    for text, pair in PAIRS:
        theirs = pipe({"text": text, "text_pair": pair}, top_k=None)
        _same_answers(ours.label_text(text, pair).as_pipeline(), theirs, ["label"])
    assert ours.reads_pairs() is True


def test_tagged_tokens_and_simple_entities_are_the_pipelines(tagger, caplog):
    """Raw text, not words: the pipeline's own tokens (aggregation "none", "O" left out) and groups ("simple"),
    tag for tag, offset for offset, decoded word for decoded word."""
    ours, out = tagger
    with caplog.at_level(logging.WARNING):
        tokens = _pipeline("token-classification", out, aggregation_strategy="none")
        simple = _pipeline("token-classification", out, aggregation_strategy="simple")
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    grouped = 0
    for text in TAGGED:
        tagged = ours.tag_text(text)
        _same_answers(tagged.as_pipeline("none"), tokens(text), ["entity", "index", "word", "start", "end"])
        _same_answers(tagged.as_pipeline("simple"), simple(text), ["entity_group", "word", "start", "end"])
        grouped += len(tagged.entities)
    assert grouped >= 5  # the case at hand: entities found
    found = ours.tag_text("the zyxxy wyzzy of a list")
    assert [(e["entity_group"], e["word"], e["start"], e["end"]) for e in found.entities] == [
        ("PER", "zyxxy wyzzy", 4, 15)
    ]


def test_each_word_is_tagged_on_its_first_piece_with_its_score(tagger):
    ours, _ = tagger
    text = "the zyxxy wyzzy of a list"
    tagged = ours.tag_text(text)
    assert [w["word"] for w in tagged.words] == text.split()
    assert all(text[w["start"] : w["end"]] == w["word"] for w in tagged.words)
    first = {t["start"]: t for t in tagged.tokens}
    assert all(w["entity"] == first[w["start"]]["entity"] and w["score"] == first[w["start"]]["score"]
               for w in tagged.words)  # fmt: skip
    assert ours.tag(text.split()) == [w["entity"] for w in tagged.words]  # as the scored words are read
    for word in tagged.words:  # marked where a later piece does not go on with the first piece's tag
        pieces = [t["entity"] for t in tagged.tokens if word["start"] <= t["start"] < word["end"]]
        first_type = pieces[0].removeprefix("B-").removeprefix("I-")
        goes_on = all(tag in (first_type, f"I-{first_type}") for tag in pieces[1:])
        assert word["pieces_differ"] is not goes_on, (word, pieces)
    assert ours.tag_text("").words == [] and ours.tag_text("").entities == []


def test_a_text_longer_than_the_model_reads_says_how_much_it_read(classifier, tagger, pair_classifier):
    long = " ".join(["the value of a list"] * 200)
    labelled = classifier[0].label_text(long)
    assert not labelled.reading.whole and labelled.reading.lengths == (len(long),)
    read = labelled.reading.read[0]
    assert 0 < read < len(long) and long[:read].endswith(("the", "value", "of", "a", "list"))
    limit = classifier[0].limit
    assert labelled.reading.describe() == (
        f"the model reads {limit:,} tokens: it read the first {read:,} of {len(long):,} characters"
    )
    tagged = tagger[0].tag_text(long)
    assert tagged.reading.read[0] == tagged.tokens[-1]["end"] < len(long)
    pair = pair_classifier[0].label_text("a list", long).reading
    assert pair.read[0] == len("a list") and pair.read[1] < len(long)
    assert pair.describe().endswith(f"{pair.read[1]:,} of {len(long):,} (second text) characters")
    first = pair_classifier[0].label_text(long, "a list").reading
    assert 0 < first.read[0] < len(long) and long[: first.read[0]].endswith(("the", "value", "of", "a", "list"))
    assert first.read[1] == len("a list")
    assert f"first {first.read[0]:,} of {len(long):,} (first text)" in first.describe()
    assert Reading(128, (5,), (5,)).describe() == ""


def test_the_run_is_found_from_its_folder_its_best_weights_or_a_checkpoint(tagger, tmp_path):
    ours, _ = tagger
    run = ours.run.path
    assert fine_tuned_at(run / "best").weights == run / "best"
    checkpoint = ours.run.latest_checkpoint()
    assert fine_tuned_at(checkpoint).weights == checkpoint
    assert fine_tuned_at(tmp_path) is None
    assert fine_tuned_at(run.parent / "export") is None  # a Hugging Face folder is not a run


def test_a_classifier_whose_training_file_is_gone_does_not_say_whether_it_reads_pairs(pair_classifier, tmp_path):
    ours, _ = pair_classifier
    task = ours.run.task
    moved = tmp_path / "moved.csv"
    path = ours.run.path.parent / "pairs.csv"
    path.rename(moved)
    try:
        assert ours.reads_pairs() is None
    finally:
        moved.rename(path)
    assert task.columns is None  # found by the header's names


@pytest.mark.slow  # a RoBERTa folder made and fine-tuned
def test_a_byte_level_bpe_taggers_tokens_and_entities_are_the_pipelines(small_corpus, tmp_path):
    """RoBERTa's pieces carry their leading space and its offsets are trimmed of it: the same tokens, offsets and
    decoded entity words as the pipeline's."""
    from itertools import islice

    from tests.core.family_folders import make_folder

    source = make_folder("roberta", list(islice(small_corpus.iter_documents(), 200)), tmp_path / "hf")
    task = write_piece_tagging(tmp_path / "tags.jsonl", sentences=60)
    options = FinetuneOptions("tokens", task, learning_rate=5e-3, epochs=1, batch_size=8, device="cpu")
    list(prepare_finetuner(tmp_path / "ft", str(source), options).run())
    ours, out = fine_tuned_at(tmp_path / "ft"), export_model(tmp_path / "ft", tmp_path / "export")
    tokens = _pipeline("token-classification", out, aggregation_strategy="none")
    simple = _pipeline("token-classification", out, aggregation_strategy="simple")
    for text in TAGGED:
        tagged = ours.tag_text(text)
        _same_answers(tagged.as_pipeline("none"), tokens(text), ["entity", "index", "word", "start", "end"])
        _same_answers(tagged.as_pipeline("simple"), simple(text), ["entity_group", "word", "start", "end"])
        assert all(text[w["start"] : w["end"]] == w["word"] and w["word"].strip() == w["word"] for w in tagged.words)
