import pytest
import torch
import transformers

from mlm_studio.core.config.sections import ModelConfig
from mlm_studio.core.data.masking import IGNORE_INDEX
from mlm_studio.core.models.bert import BertForMaskedLM
from mlm_studio.core.models.encoder import ExplicitAttention, VocabularyCrossEntropy, attention_kernel, decay_groups

CONFIG = ModelConfig(
    vocab_size=300,
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=128,
    max_position_embeddings=64,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
)


def hf_model(config: ModelConfig) -> transformers.BertForMaskedLM:
    torch.manual_seed(0)
    hf_config = transformers.BertConfig(
        **{
            k: getattr(config, k)
            for k in (
                "vocab_size",
                "hidden_size",
                "num_hidden_layers",
                "num_attention_heads",
                "intermediate_size",
                "hidden_act",
                "hidden_dropout_prob",
                "attention_probs_dropout_prob",
                "max_position_embeddings",
                "type_vocab_size",
                "initializer_range",
                "layer_norm_eps",
                "pad_token_id",
            )
        }
    )
    return transformers.BertForMaskedLM(hf_config).eval()


def batch(rows=3, length=20, pad_from=14):
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(5, CONFIG.vocab_size, (rows, length), generator=generator)
    attention = torch.ones(rows, length, dtype=torch.bool)
    attention[0, pad_from:] = False
    ids[0, pad_from:] = 0
    return ids, attention


def test_parameter_names_are_hugging_face_names():
    ours = set(BertForMaskedLM(CONFIG).state_dict())
    theirs = {k for k in hf_model(CONFIG).state_dict() if not k.endswith("position_ids")}
    assert ours == theirs


def test_same_logits_as_transformers_with_the_same_weights():
    reference = hf_model(CONFIG)
    ours = BertForMaskedLM(CONFIG).eval()
    ours.load_state_dict(reference.state_dict(), strict=False)
    ids, attention = batch()
    with torch.no_grad():
        expected = reference(input_ids=ids, attention_mask=attention.long()).logits
        got = ours(ids, attention).logits
    real = attention  # padded positions are not compared: their outputs are meaningless in both
    assert torch.allclose(got[real], expected[real], atol=1e-5)


def test_sparse_prediction_loss_equals_the_dense_head():
    model = BertForMaskedLM(CONFIG).eval()
    ids, attention = batch()
    labels = torch.full_like(ids, IGNORE_INDEX)
    chosen = torch.rand(ids.shape, generator=torch.Generator().manual_seed(2)) < 0.15
    labels[chosen & attention] = ids[chosen & attention]
    with torch.no_grad():
        sparse = model(ids, attention, labels)
        dense = model(ids, attention, labels, dense=True)
    assert sparse.logits.shape == (int((labels != IGNORE_INDEX).sum()), CONFIG.vocab_size)
    assert abs(float(sparse.loss) - float(dense.loss)) < 1e-5
    assert torch.allclose(sparse.logits, dense.logits[labels != IGNORE_INDEX], atol=1e-6)


def test_gradients_of_sparse_and_dense_agree():
    model = BertForMaskedLM(CONFIG)
    ids, attention = batch()
    labels = torch.where(torch.arange(ids.shape[1]) % 5 == 1, ids, IGNORE_INDEX)
    grads = []
    for dense in (False, True):
        model.zero_grad()
        torch.manual_seed(3)
        model.eval()
        model(ids, attention, labels, dense=dense).loss.backward()
        grads.append(model.bert.embeddings.word_embeddings.weight.grad.clone())
    assert torch.allclose(grads[0], grads[1], atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_vocabulary_cross_entropy_equals_pytorchs_in_value_and_gradient(dtype):
    generator = torch.Generator().manual_seed(4)
    base = (torch.randn(137, 1000, generator=generator) * 4).to(dtype)  # 137 rows: not a multiple of its chunks
    targets = torch.randint(0, 1000, (137,), generator=generator)
    ours, theirs = base.clone().requires_grad_(), base.clone().requires_grad_()
    loss, top = VocabularyCrossEntropy.apply(ours, targets)
    expected = torch.nn.functional.cross_entropy(theirs.float(), targets)
    assert torch.equal(top, base.float().amax(-1))
    (loss * 3).backward()
    (expected * 3).backward()
    assert abs(loss.item() - expected.item()) < 1e-5
    assert ours.grad.dtype == dtype
    assert torch.allclose(ours.grad.float(), theirs.grad.float(), atol=1e-6 if dtype == torch.float32 else 1e-3)


def test_vocabulary_cross_entropy_refuses_a_second_backward():
    logits = torch.randn(4, 10, requires_grad=True)
    loss, _ = VocabularyCrossEntropy.apply(logits * 1.0, torch.tensor([1, 2, 3, 4]))
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="twice"):
        loss.backward()


def test_padding_does_not_change_real_positions():
    model = BertForMaskedLM(CONFIG).eval()
    ids, attention = batch(rows=1, pad_from=10)
    with torch.no_grad():
        padded = model(ids, attention).logits[0, :10]
        alone = model(ids[:, :10]).logits[0]
    assert torch.allclose(padded, alone, atol=1e-5)


@pytest.mark.parametrize("variant", [{"pre_layer_norm": True}, {"position_embedding_type": "sinusoidal"}])
def test_variants_train_and_have_their_own_parameters(variant):
    from dataclasses import replace

    config = replace(CONFIG, **variant)
    model = BertForMaskedLM(config)
    names = set(model.state_dict())
    assert ("bert.encoder.final_layer_norm.weight" in names) == config.pre_layer_norm
    assert ("bert.embeddings.position_embeddings.weight" in names) == (config.position_embedding_type == "absolute")
    ids, attention = batch()
    labels = torch.where(torch.arange(ids.shape[1]) % 4 == 1, ids, IGNORE_INDEX)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(10):
        loss = model(ids, attention, labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] - 1.0


def test_weight_decay_skips_biases_and_layer_norms():
    model = BertForMaskedLM(CONFIG)
    decay, no_decay = decay_groups(model, 0.01)
    names = {id(p): n for n, p in model.named_parameters()}
    assert all(p.ndim == 2 for p in decay["params"])
    assert any("LayerNorm" in names[id(p)] for p in no_decay["params"])
    assert all(p.ndim == 1 for p in no_decay["params"])
    total = len(decay["params"]) + len(no_decay["params"])
    assert total == len(list(model.parameters()))


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_fast_dropout_drops_at_the_rate_and_keeps_the_expectation(p):
    """Over a million values: the dropped share within 0.002 of p (about 6 standard deviations at most),
    kept values scaled so the mean is unchanged, and the same mask for the same seed."""
    from mlm_studio.core.models.encoder import dropout

    x = torch.ones(1_000_000)
    torch.manual_seed(0)
    y = dropout(x, p, training=True)
    dropped = float((y == 0).float().mean())
    assert abs(dropped - p) < 0.002
    kept = y[y != 0]
    assert torch.allclose(kept, torch.full_like(kept, 65536 / (65536 - round(p * 65536))))
    assert abs(float(y.mean()) - 1.0) < 0.01
    torch.manual_seed(0)
    assert torch.equal(dropout(x, p, training=True), y)
    assert dropout(x, p, training=False) is x and dropout(x, 0.0, training=True) is x


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_explicit_attention_equals_sdpa_in_value_and_gradient_under_a_band_mask(dtype):
    """What the CPU trains bf16 with (its hand-written backward) gives SDPA's values and gradients in fp32, and
    SDPA's in fp32 to bf16's precision."""
    generator = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(3, 2, 20, 8, generator=generator) for _ in range(3))
    offsets = torch.arange(20)
    mask = ((offsets[:, None] - offsets[None, :]).abs() <= 4) & torch.tensor([True] * 17 + [False] * 3)
    grad = torch.randn(3, 2, 20, 8, generator=generator)
    results = []
    for compute in (ExplicitAttention.apply, None):
        inputs = [t.to(dtype if compute else torch.float32).requires_grad_() for t in (q, k, v)]
        if compute:
            out = compute(*inputs, mask[None, None], 0.0)
        else:
            out = torch.nn.functional.scaled_dot_product_attention(*inputs, attn_mask=mask[None, None])
        out.backward(grad.to(out.dtype))
        results.append([out.float()] + [t.grad.float() for t in inputs])
    tolerance = 1e-5 if dtype == torch.float32 else 3e-2
    for ours, theirs in zip(*results):
        torch.testing.assert_close(ours, theirs, atol=tolerance, rtol=0)
    assert attention_kernel("cpu", torch.bfloat16, 0.0) == "explicit"
    assert attention_kernel("cpu", torch.float32, 0.0) == "sdpa"
    assert attention_kernel("cpu", torch.float32, 0.1) == "explicit"


def test_attention_with_dropout_off_matches_scaled_dot_product_attention():
    """The CPU training path (explicit attention, for the faster dropout) computes what SDPA computes."""
    from mlm_studio.core.models.bert import BertSelfAttention

    config = ModelConfig(hidden_size=32, num_attention_heads=4, attention_probs_dropout_prob=0.1)
    attention = BertSelfAttention(config).train()
    x = torch.randn(2, 7, 32)
    mask = torch.tensor([[True] * 7, [True] * 5 + [False] * 2])[:, None, None, :]
    torch.manual_seed(3)
    explicit = attention(x, mask)
    attention.dropout_p = 0.0
    reference = attention(x, mask)
    assert explicit.shape == reference.shape
    attention.dropout_p = 1e-9  # explicit path, practically nothing dropped
    torch.testing.assert_close(attention(x, mask), reference, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("pre_layer_norm", [False, True])
def test_logits_at_chosen_positions_equal_the_dense_ones_in_any_order(pre_layer_norm):
    """The last layer runs only at the chosen positions; the logits there are the dense pass's."""
    config = ModelConfig(vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                         intermediate_size=64, pre_layer_norm=pre_layer_norm)  # fmt: skip
    model = BertForMaskedLM(config).eval()
    ids = torch.randint(5, 50, (3, 9))
    attention = torch.ones(3, 9, dtype=torch.bool)
    attention[2, 6:] = False
    positions = torch.tensor([[2, 4], [0, 0], [1, 8], [0, 5], [2, 4]])  # unordered, one repeated
    with torch.no_grad():
        dense = model(ids, attention).logits
        sparse = model.predict_at(ids, positions, attention)
    torch.testing.assert_close(sparse, dense[positions[:, 0], positions[:, 1]], atol=1e-5, rtol=1e-5)
