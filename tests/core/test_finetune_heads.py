"""Each family's heads against `transformers`' own: tiny random `…ForSequenceClassification`,
`…ForTokenClassification` and `…ForQuestionAnswering` models that `transformers` made, loaded into MLM Studio's,
give the same logits."""

import pytest
import torch

from mlm_studio.core.config.families import FAMILIES
from mlm_studio.core.finetune.heads import TaskModel, architecture

transformers = pytest.importorskip("transformers")

SHAPE = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64}
CONFIGS = {
    "bert": ("BertConfig", {**SHAPE, "max_position_embeddings": 40}),
    "roberta": ("RobertaConfig", {**SHAPE, "max_position_embeddings": 42, "type_vocab_size": 1, "pad_token_id": 1}),
    "distilbert": ("DistilBertConfig", {"dim": 32, "n_layers": 2, "n_heads": 4, "hidden_dim": 64}),
    "electra": ("ElectraConfig", {**SHAPE, "embedding_size": 16, "max_position_embeddings": 40}),
    "modernbert": (
        "ModernBertConfig",
        {**SHAPE, "local_attention": 8, "global_attn_every_n_layers": 2, "pad_token_id": 0, "bos_token_id": 1}
        | {"eos_token_id": 2, "cls_token_id": 1, "sep_token_id": 2},
    ),
}
VOCAB, LABELS = 90, 5


def _pair(family: str, task: str, pooling: str = "cls"):
    config_class, values = CONFIGS[family]
    extra = {"classifier_pooling": pooling} if family == "modernbert" else {}
    labels = 2 if task == "qa" else LABELS
    config = getattr(transformers, config_class)(
        vocab_size=VOCAB, num_labels=labels, initializer_range=0.2, **values, **extra
    )
    torch.manual_seed(3)
    theirs = getattr(transformers, architecture(family, task))(config).eval()
    ours = TaskModel(FAMILIES[family].from_hf(config.to_dict()), task, labels, pooling).eval()
    state = {k: v for k, v in theirs.state_dict().items() if not k.endswith(("position_ids", "token_type_ids"))}
    ours.load_state_dict(state)  # strict: the same names and shapes
    return ours, theirs


def _batch(pad: int):
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(5, VOCAB, (3, 12), generator=generator)
    mask = torch.ones_like(ids)
    ids[1, 8:], mask[1, 8:] = pad, 0
    ids[2, 5:], mask[2, 5:] = pad, 0
    return ids, mask


@pytest.mark.parametrize("task", ["classification", "tokens"])
@pytest.mark.parametrize("family", list(CONFIGS))
def test_heads_give_transformers_logits(family, task):
    ours, theirs = _pair(family, task)
    ids, mask = _batch(theirs.config.pad_token_id)
    with torch.no_grad():
        expected = theirs(input_ids=ids, attention_mask=mask).logits
        got = ours(ids, mask)
    if task == "tokens":
        real = mask.bool()
        got, expected = got[real], expected[real]
    assert got.shape[-1] == LABELS
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=0)


@pytest.mark.parametrize("family", list(CONFIGS))
def test_question_answering_heads_give_transformers_start_and_end_logits(family):
    """Every token's start and end logits, padding aside; the parameters named as `…ForQuestionAnswering`'s."""
    ours, theirs = _pair(family, "qa")
    ids, mask = _batch(theirs.config.pad_token_id)
    with torch.no_grad():
        expected = theirs(input_ids=ids, attention_mask=mask)
        got = ours(ids, mask)
    real = mask.bool()
    torch.testing.assert_close(got[..., 0][real], expected.start_logits[real], atol=1e-5, rtol=0)
    torch.testing.assert_close(got[..., 1][real], expected.end_logits[real], atol=1e-5, rtol=0)
    head = {name.split(".")[0] for name in theirs.state_dict()} - {FAMILIES[family].prefix}
    assert head == ({"head", "classifier"} if family == "modernbert" else {"qa_outputs"})


def test_modernbert_mean_pooling_matches():
    ours, theirs = _pair("modernbert", "classification", pooling="mean")
    ids, mask = _batch(theirs.config.pad_token_id)
    with torch.no_grad():
        expected = theirs(input_ids=ids, attention_mask=mask).logits
        torch.testing.assert_close(ours(ids, mask), expected, atol=1e-5, rtol=0)


def test_mean_pooling_is_refused_where_the_family_reads_the_first_token():
    from mlm_studio.core.data.labelled import TaskError

    with pytest.raises(TaskError, match="pooling 'cls' only"):
        TaskModel(FAMILIES["bert"].from_hf({**CONFIGS["bert"][1], "vocab_size": VOCAB}), "classification", 3, "mean")
