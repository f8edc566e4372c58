"""Text pairs are laid out as each tokenizer's own post-processor lays them out in `transformers` (BERT's
segments 0 and 1, RoBERTa's `<s> A </s></s> B </s>`), the longer text cut first, and the segment ids reach the
families that read them."""

import random

import pytest
import torch
from tokenizers import processors

from mlm_studio.core.data.labelled import Example
from mlm_studio.core.data.tokenizer import MLMTokenizer
from mlm_studio.core.finetune.examples import collate, encode_examples
from mlm_studio.core.finetune.heads import TaskModel
from tests.core.family_folders import save_tokenizer
from tests.core.helpers import small_config

transformers = pytest.importorskip("transformers")

DOCUMENTS = ["Return the value of the list, raising ValueError if it is empty.", "the path of a file is long"] * 30
WORDS = "return the value of a list raise an error to the file path is long".split()


def _bert_pairs(backend):
    cls, sep = "[CLS]", "[SEP]"
    return processors.TemplateProcessing(
        single=f"{cls} $A {sep}",
        pair=f"{cls} $A {sep} $B:1 {sep}:1",
        special_tokens=[(cls, backend.token_to_id(cls)), (sep, backend.token_to_id(sep))],
    )


def _roberta_pairs(backend):
    return processors.RobertaProcessing(("</s>", backend.token_to_id("</s>")), ("<s>", backend.token_to_id("<s>")))


@pytest.fixture(scope="module", params=[("wordpiece", _bert_pairs), ("bpe-roberta", _roberta_pairs)])
def tokenizers(request, tmp_path_factory):
    """MLM Studio's tokenizer and `transformers`' over the same tokenizer.json."""
    kind, layout = request.param
    folder = tmp_path_factory.mktemp(kind)
    backend = save_tokenizer(kind, DOCUMENTS, folder).backend_tokenizer
    backend.post_processor = layout(backend)
    backend.save(str(folder / "tokenizer.json"))
    return MLMTokenizer.load(folder / "tokenizer.json"), transformers.PreTrainedTokenizerFast.from_pretrained(folder)


@pytest.mark.parametrize("limit", [64, 12, 7])
def test_pairs_are_encoded_as_transformers_encodes_them(tokenizers, limit):
    ours, theirs = tokenizers
    rng = random.Random(limit)
    examples = [
        Example(row, tuple(" ".join(rng.choices(WORDS, k=rng.randint(1, 12))) for _ in range(2)), ("x",))
        for row in range(1, 40)
    ]
    encoded = encode_examples(ours, examples, {"x": 0}, "classification", limit)
    cut = 0
    for i, (example, ids) in enumerate(zip(examples, encoded.ids, strict=True)):
        expected = theirs(*example.inputs, truncation="longest_first", max_length=limit, return_token_type_ids=True)
        assert ids.tolist() == expected["input_ids"]
        types = [0] * len(ids) if encoded.types is None else encoded.types[i].tolist()  # None: all segment 0
        assert types == expected["token_type_ids"]
        full = theirs(*example.inputs)["input_ids"]
        cut += len(full) > limit
    assert len(encoded.truncated) == cut
    assert limit > 12 or cut > 0


def test_segment_ids_reach_bert_and_electra_but_not_distilbert():
    reading = {"bert": True, "electra": True, "roberta": True, "distilbert": False, "modernbert": False}
    for family, reads in reading.items():
        config = small_config().model.as_family(family)
        torch.manual_seed(0)
        model = TaskModel(config, "classification", 2).eval()
        ids = torch.randint(5, config.vocab_size, (2, 9))
        types = torch.zeros_like(ids)
        types[:, 5:] = 1
        with torch.no_grad():
            same = torch.equal(model(ids, None, types), model(ids, None, torch.zeros_like(ids)))
        assert same != (reads and config.type_vocab_size > 1), family


def test_a_batch_carries_each_examples_segments(tokenizers):
    ours, _ = tokenizers
    examples = [Example(1, ("the file", "is long"), ("x",)), Example(2, ("return the value of a list",), ("x",))]
    encoded = encode_examples(ours, examples, {"x": 0}, "classification", 64)
    ids, mask, types, _ = collate(encoded, [0, 1], ours.pad_id, torch.device("cpu"))
    first = [0] * len(encoded.ids[0]) if encoded.types is None else encoded.types[0].tolist()  # None: all 0
    assert types[0, : len(encoded.ids[0])].tolist() == first
    assert types[1].tolist() == [0] * ids.shape[1]
    assert mask.sum(1).tolist() == [len(encoded.ids[0]), len(encoded.ids[1])]
