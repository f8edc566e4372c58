"""A fine-tuned model of every family exported as its family's `…ForSequenceClassification` /
`…ForTokenClassification` / `…ForQuestionAnswering`: `transformers` loads it without a warning and predicts what
MLM Studio predicts, label for label and probability for probability, entity for entity and answer for answer."""

import csv
import json
import logging
import random
from dataclasses import replace
from itertools import islice

import numpy as np
import pytest
import torch

from mlm_studio.core.finetune.examples import word_pieces
from mlm_studio.core.finetune.options import FinetuneOptions
from mlm_studio.core.finetune.predict import FineTuned
from mlm_studio.core.finetune.scores import entities
from mlm_studio.core.finetune.setup import prepare_finetuner
from mlm_studio.core.interop.export import export_model
from mlm_studio.core.runs.records import TestRecord
from mlm_studio.core.runs.run_folder import RunDir
from tests.core.family_folders import make_folder
from tests.core.helpers import small_config
from tests.core.qa_tasks import squad_document, write_squad
from tests.core.test_finetune import write_task
from tests.core.test_finetune_tokens import ENTITY_WORDS, write_piece_tagging

transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.slow  # a fine-tuning run and an export per family and task

FAMILIES = ["bert", "roberta", "distilbert", "modernbert", "electra"]
TEXTS = ["return the value of a list", "raise an error to the file", "the path of a file is", "of the and"]
PAIRS = [("return the value", "of a list"), ("the path of a file is", "raise an error"), ("of", "the and a list")]


@pytest.fixture(scope="module", params=FAMILIES)
def source(request, tmp_path_factory, small_corpus, small_tokenizer):
    """A Hugging Face folder of the family with its own kind of tokenizer (an ELECTRA: a run of MLM Studio's)."""
    folder = tmp_path_factory.mktemp(request.param)
    if request.param != "electra":
        return str(make_folder(request.param, list(islice(small_corpus.iter_documents(), 200)), folder / "hf"))
    from mlm_studio.core.training.runs import start_run, training_blocks
    from mlm_studio.core.training.trainer import Trainer

    config = small_config(max_steps=2)
    run = start_run(
        folder / "run", replace(config, model=config.model.as_family("electra")), small_corpus, small_tokenizer
    )
    list(Trainer(run, *training_blocks(run, small_corpus)).run())
    return str(run.path)


def _fine_tuned(source, task, path, tmp_path, **values):
    options = FinetuneOptions(
        task, path, **{"learning_rate": 5e-3, "epochs": 1, "batch_size": 8, "device": "cpu", **values}
    )
    records = list(prepare_finetuner(tmp_path / "ft", source, options).run())
    out = export_model(tmp_path / "ft", tmp_path / "export")
    return FineTuned(RunDir(tmp_path / "ft")), out, next(r for r in records if isinstance(r, TestRecord))


def _quiet_pipeline(kind, out, caplog, **options):
    with caplog.at_level(logging.WARNING):
        pipe = transformers.pipeline(kind, model=str(out), **options)
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warned == []
    return pipe


def test_an_exported_classifier_predicts_as_mlm_studio(source, tmp_path, caplog):
    ours, out, _ = _fine_tuned(source, "classification", write_task(tmp_path / "task.csv", rows=60), tmp_path)
    config = json.loads((out / "config.json").read_text())
    assert config["architectures"][0].endswith("ForSequenceClassification")
    assert config["id2label"] == {"0": "errors", "1": "files", "2": "returns"}
    pipe = _quiet_pipeline("text-classification", out, caplog)
    assert type(pipe.model).__name__ == config["architectures"][0]
    theirs = pipe(TEXTS)
    for (label, probability), answer in zip(ours.classify(TEXTS), theirs, strict=True):
        assert answer["label"] == label
        assert answer["score"] == pytest.approx(probability, abs=1e-5)
    assert "pipeline_tag: text-classification" in (out / "README.md").read_text()


def write_pairs(path, rows=60, seed=0):
    """Pairs whose label says which of the two texts holds the word "error"."""
    rng = random.Random(seed)
    words = ["the", "value", "of", "a", "list", "file", "path", "return"]
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["sentence1", "sentence2", "label"])
        for _ in range(rows):
            first, second = ([rng.choice(words) for _ in range(rng.randint(2, 7))] for _ in range(2))
            label = rng.choice(["first", "second"])
            (first if label == "first" else second).insert(1, "error")
            writer.writerow([" ".join(first), " ".join(second), label])
    return path


def test_an_exported_pair_classifier_predicts_as_mlm_studio(source, tmp_path, caplog):
    ours, out, _ = _fine_tuned(source, "classification", write_pairs(tmp_path / "pairs.csv"), tmp_path)
    pipe = _quiet_pipeline("text-classification", out, caplog)
    theirs = pipe([{"text": a, "text_pair": b} for a, b in PAIRS])
    for (label, probability), answer in zip(ours.classify(PAIRS), theirs, strict=True):
        assert answer["label"] == label
        assert answer["score"] == pytest.approx(probability, abs=1e-5)


def test_an_exported_tagger_predicts_as_mlm_studio(source, tmp_path, caplog):
    """The pipeline's tag of each word's first piece is MLM Studio's, for every family."""
    ours, out, _ = _fine_tuned(source, "tokens", write_piece_tagging(tmp_path / "tags.jsonl", sentences=60), tmp_path)
    assert json.loads((out / "config.json").read_text())["architectures"][0].endswith("ForTokenClassification")
    pipe = _quiet_pipeline("token-classification", out, caplog, aggregation_strategy="none")
    for words in _held_out_sentences(tmp_path):
        text = " ".join(words)
        by_token = {answer["index"]: answer["entity"] for answer in pipe(text)}  # O is left out
        encoding = pipe.tokenizer(text, return_offsets_mapping=True)
        first_token = {}
        for index, (begin, end) in enumerate(encoding["offset_mapping"]):
            piece = text[begin:end]
            if piece.strip():  # a piece of a word (a lone space belongs to none)
                first_token.setdefault(text[: end - len(piece.lstrip())].count(" "), index)
        predicted = [by_token.get(first_token[w], "O") for w in range(len(words))]
        assert predicted == ours.tag(words)


def _held_out_sentences(tmp_path, inside=True, bioes=False):
    count = 20 if inside else 40  # one-word entities: as many names in twice the sentences
    held = write_piece_tagging(tmp_path / "held.jsonl", count, seed=1, inside=inside)
    return [json.loads(line)["tokens"] for line in (_as_bioes(held) if bioes else held).read_text().splitlines()]


def _as_bioes(path):
    """A B-/I- tagged file rewritten BIOES: an entity's last word E-; each LOC entity cut to its first word, S-."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        kept = [i for i, tag in enumerate(row["tags"]) if tag != "I-LOC"]
        row["tokens"], row["tags"] = [row["tokens"][i] for i in kept], [row["tags"][i] for i in kept]
        tags = row["tags"]
        for i, tag in enumerate(tags):
            ends = i + 1 == len(tags) or not tags[i + 1].startswith("I-")
            if ends and tag != "O":
                tags[i] = ("S-" if tag.startswith("B-") else "E-") + tag[2:]
    path.write_text("\n".join(json.dumps(row) for row in rows), encoding="utf-8")
    assert {"S-LOC", "E-PER"} <= {tag for row in rows for tag in row["tags"]}
    return path


@pytest.mark.parametrize(
    ("inside", "bioes"), [(True, False), (False, False), (True, True)], ids=["B-and-I-tags", "B-tags-only", "BIOES"]
)
def test_an_exported_tagger_finds_mlm_studios_entities(trained_run, tmp_path, caplog, inside, bioes):
    """Entities of made-up words that the model's vocabulary splits into several pieces: `transformers`' "first"
    aggregation (each word tagged as its first piece, as the model card says) finds exactly the entities MLM Studio
    finds, word and type, and so does "simple" (pieces grouped by their own tags) once the later pieces are learned;
    also for a task whose types have B- tags only (their I- tags are added for the later pieces to learn), and for
    one tagged BIOES (learned as the B-/I- tags of the same entities, which the pipeline groups)."""
    task = write_piece_tagging(tmp_path / "tags.jsonl", inside=inside)
    if bioes:
        _as_bioes(task)
    ours, out, test = _fine_tuned(str(trained_run.path), "tokens", task, tmp_path, epochs=8, eval_interval=10_000)
    assert {"I-PER", "I-LOC"} <= set(ours.labels)
    assert test.accuracy >= 0.95 and test.entity_f1 >= 0.9, (test.accuracy, test.entity_f1)
    sentences = _held_out_sentences(tmp_path, inside, bioes)
    named = {word for parts in ENTITY_WORDS.values() for words in parts for word in words}
    pieces = [word_pieces(ours.tokenizer, tuple(words))[1] for words in sentences]
    split = [w for words, of in zip(sentences, pieces) for i, w in enumerate(words) if w in named and of.count(i) > 1]
    assert len(split) >= 10  # the case at hand: names of several pieces
    grouped = _quiet_pipeline("token-classification", out, caplog, aggregation_strategy="first")
    by_pieces = _quiet_pipeline("token-classification", out, caplog, aggregation_strategy="simple")
    for words in sentences:
        text = " ".join(words)
        mine = [(" ".join(words[first : last + 1]), kind) for kind, first, last in entities(ours.tag(words))]
        for pipe in (grouped, by_pieces):
            assert [(text[g["start"] : g["end"]].strip(), g["entity_group"]) for g in pipe(text)] == mine
        tagged = ours.tag_text(text)  # the entities predict's table, its --json and the window show
        assert [(text[e["start"] : e["end"]].strip(), e["entity_group"]) for e in tagged.as_pipeline()] == mine


def _transformers_answer(model, tokenizer, question, context, max_length, stride, max_answer_length):
    """The best answer as `transformers` finds it, with the decoding of its question-answering pipeline
    (`select_starts_ends`, kept in its document-question-answering pipeline): its tokenizer's windows
    ("only_second" with overflowing tokens), its model's logits, spans widened to whole words."""
    from transformers.pipelines.document_question_answering import select_starts_ends

    encoded = tokenizer(
        question,
        context,
        truncation="only_second",
        max_length=max_length,
        stride=stride,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
    )
    reads_types = "token_type_ids" in tokenizer.model_input_names  # what the pipeline gives the model
    answers = []
    for window, encoding in enumerate(encoded.encodings):
        inputs = {"input_ids": torch.tensor([encoding.ids]), "attention_mask": torch.tensor([encoding.attention_mask])}
        if reads_types:
            inputs["token_type_ids"] = torch.tensor([encoding.type_ids])
        with torch.no_grad():
            output = model(**inputs)
        p_mask = np.asarray([0 if s == 1 else 1 for s in encoded.sequence_ids(window)])
        p_mask[0] = 0  # the first token stays in the softmax
        starts, ends, scores, _ = select_starts_ends(
            output.start_logits.numpy(), output.end_logits.numpy(), p_mask, np.asarray(encoding.attention_mask)[None],
            max_answer_len=max_answer_length,
        )  # fmt: skip
        for s, e, score in zip(starts, ends, scores):
            first = encoding.word_to_chars(encoding.token_to_word(int(s)), sequence_index=1)[0]
            last = encoding.word_to_chars(encoding.token_to_word(int(e)), sequence_index=1)[1]
            answers.append({"score": float(score), "start": first, "end": last, "answer": context[first:last]})
    return max(answers, key=lambda answer: answer["score"]), len(encoded.encodings)


def test_an_exported_question_answerer_answers_as_mlm_studio(source, tmp_path, caplog):
    """`transformers` loads the exported `…ForQuestionAnswering` without a warning, and its tokenizer's windows,
    its model's logits and its pipeline's decoding give MLM Studio's answer on held-out questions, for every
    family."""
    squad = write_squad(tmp_path / "squad.json", contexts=40, facts=1)
    ours, out, _ = _fine_tuned(source, "qa", squad, tmp_path, doc_stride=8, max_answer_length=6)
    config = json.loads((out / "config.json").read_text())
    assert config["architectures"][0].endswith("ForQuestionAnswering") and "id2label" not in config
    assert "pipeline_tag: question-answering" in (out / "README.md").read_text()
    with caplog.at_level(logging.WARNING):
        model = transformers.AutoModelForQuestionAnswering.from_pretrained(out).eval()
        tokenizer = transformers.AutoTokenizer.from_pretrained(out)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert type(model).__name__ == config["architectures"][0]
    held_out, windows = squad_document(contexts=6, seed=1, facts=2, filler=12), []
    for article in held_out["data"]:
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            for qa in paragraph["qas"]:
                theirs, read = _transformers_answer(model, tokenizer, qa["question"], context, ours.limit, 8, 6)
                windows.append(read)
                mine = ours.answer(qa["question"], context)[0]
                assert (mine["answer"], mine["start"], mine["end"]) == (
                    theirs["answer"],
                    theirs["start"],
                    theirs["end"],
                )
                assert mine["score"] == pytest.approx(theirs["score"], abs=1e-5)
    assert min(windows) >= 2  # every context read in several windows
