"""ELECTRA: the objective's pieces (replacement bookkeeping, loss weighting, shared embeddings, AUC), the trainer's
records, exact resume, and parity of both halves with `transformers`' ElectraForPreTraining and
ElectraForMaskedLM."""

import json

import pytest
import torch
import torch.nn.functional as F
import transformers
from safetensors.torch import load_file
from sklearn.metrics import roc_auc_score

from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.config.sections import ModelConfig, generator_config
from mlm_studio.core.data.masking import IGNORE_INDEX
from mlm_studio.core.evaluation.diagnosis import diagnose
from mlm_studio.core.evaluation.predict import FillMask
from mlm_studio.core.evaluation.subject import load_subject
from mlm_studio.core.evaluation.task_probe import probe_task
from mlm_studio.core.interop.export import export_model
from mlm_studio.core.models.electra import ElectraForPreTraining
from mlm_studio.core.models.encoder import MLMOutput
from mlm_studio.core.models.hf_folder import import_model
from mlm_studio.core.models.replaced_tokens import ElectraOutput, ReplacedTokenDetection, auc_from_histogram
from mlm_studio.core.runs.records import EvalRecord, StepRecord
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.training.runs import start_run, training_blocks
from mlm_studio.core.training.trainer import Trainer
from tests.command import mlm_studio
from tests.core.family_folders import save_tokenizer
from tests.core.helpers import small_config

DISCRIMINATOR = ModelConfig(
    family="electra", vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
    intermediate_size=64, max_position_embeddings=32, embedding_size=16,
)  # fmt: skip


def electra_config(**training) -> RunConfig:
    return small_config(**training).with_objective("electra")


def pair(size: float = 0.5) -> ReplacedTokenDetection:
    torch.manual_seed(0)
    return ReplacedTokenDetection(DISCRIMINATOR, size, 50.0)


def masked_batch():
    ids = torch.randint(5, 50, (2, 12), generator=torch.Generator().manual_seed(3))
    labels = torch.full_like(ids, IGNORE_INDEX)
    labels[:, [2, 5, 9]] = ids[:, [2, 5, 9]]
    shown = ids.clone()
    shown[:, [2, 5, 9]] = 4  # [MASK]
    return ids, shown, labels


def forcing(model: ReplacedTokenDetection, choose) -> None:
    """Make the generator put all its probability on `choose(original)` at each masked position."""
    real = model.generator.forward

    def forward(input_ids, attention_mask=None, labels=None):
        out = real(input_ids, attention_mask, labels)
        logits = torch.full_like(out.logits, -1e4)
        logits[torch.arange(len(out.labels)), choose(out.labels)] = 1e4
        return MLMOutput(out.loss, logits, out.labels, None)

    model.generator.forward = forward


def test_a_sampled_token_equal_to_the_original_counts_as_original():
    model = pair()
    _, shown, labels = masked_batch()
    forcing(model, lambda original: original)
    out = model(shown, None, labels)
    assert not out.replaced.any()  # every masked position was refilled with its own token
    forcing(model, lambda original: (original + 1) % 50)
    out = model(shown, None, labels)
    assert out.replaced.view(2, 12)[:, [2, 5, 9]].all() and out.replaced.sum() == 6


def test_the_discriminator_sees_the_replacements_and_the_loss_is_weighted():
    model = pair()
    ids, shown, labels = masked_batch()
    seen = []
    model.discriminator.register_forward_hook(lambda _m, inputs, _o: seen.append(inputs[0].clone()))
    forcing(model, lambda original: (original + 1) % 50)
    out = model(shown, None, labels)
    corrupted = ids.clone()
    corrupted[:, [2, 5, 9]] = (ids[:, [2, 5, 9]] + 1) % 50
    assert torch.equal(seen[0], corrupted)  # originals everywhere but the masks, which hold the samples
    detection = F.binary_cross_entropy_with_logits(out.detection_logits, out.replaced.float())
    assert out.loss.item() == pytest.approx(out.generator_loss.item() + 50.0 * detection.item(), rel=1e-6)
    assert out.masked_lm_loss is out.generator_loss


def test_padding_is_neither_scored_nor_counted():
    model = pair()
    _, shown, labels = masked_batch()
    attention = torch.ones_like(shown)
    attention[1, 10:] = 0
    out = model(shown, attention, labels)
    assert len(out.detection_logits) == 22 and out.detection_sums()[1].item() == 22


def test_generator_and_discriminator_share_one_embeddings_module_saved_once(tmp_path):
    model = pair(0.25)
    shared = model.discriminator.electra.embeddings
    assert model.generator.electra.embeddings is shared
    assert model.generator.generator_lm_head.weight is shared.word_embeddings.weight
    generator = model.generator.config
    assert (generator.hidden_size, generator.num_attention_heads, generator.intermediate_size) == (8, 1, 16)
    assert generator.embedding_width() == 16 == DISCRIMINATOR.embedding_width()
    _, shown, labels = masked_batch()
    model(shown, None, labels).loss.backward()
    before = shared.word_embeddings.weight.detach().clone()
    torch.optim.SGD(model.parameters(), lr=0.1).step()
    assert not torch.equal(before, model.generator.generator_lm_head.weight)  # one tensor, updated once


def test_the_histogram_auc_is_sklearns_to_a_bin():
    generator = torch.Generator().manual_seed(0)
    replaced = torch.rand(5000, generator=generator) < 0.15
    logits = torch.randn(5000, generator=generator) + 1.5 * replaced
    out = ElectraOutput(None, torch.zeros(0), None, None, None, logits, replaced, torch.zeros(0))
    expected = roc_auc_score(replaced.numpy(), logits.numpy())
    assert auc_from_histogram(out.detection_histogram()) == pytest.approx(expected, abs=1e-3)


def test_generator_size_scales_width_heads_and_feed_forward():
    base = ModelConfig(family="electra", hidden_size=768, num_attention_heads=12, intermediate_size=3072)
    quarter = generator_config(base, 0.25)
    assert (quarter.hidden_size, quarter.num_attention_heads, quarter.intermediate_size) == (192, 3, 768)
    assert quarter.num_hidden_layers == base.num_hidden_layers and quarter.embedding_width() == 768


def test_the_trainer_records_detection_and_learns_it(tmp_path, small_corpus, small_tokenizer):
    config = electra_config(max_steps=30, eval_interval=30, eval_blocks=32, learning_rate=3e-3)
    run = start_run(tmp_path / "run", config, small_corpus, small_tokenizer)
    records = list(Trainer(run, *training_blocks(run, small_corpus)).run())
    steps = [r for r in records if isinstance(r, StepRecord)]
    final = next(r for r in records if isinstance(r, EvalRecord))
    assert all(0 <= r.detection_accuracy <= 1 and r.detection_loss > 0 for r in steps)
    assert steps[-1].detection_loss < steps[0].detection_loss
    # the discriminator ranks replaced tokens above originals better than chance (0.5); with 30 steps it
    # reaches about 0.7 here, so 0.55 leaves a wide margin
    assert final.detection_auc > 0.55
    written = [r for r in run.read_metrics() if r["type"] == "eval"][-1]
    assert written["detection_auc"] == pytest.approx(final.detection_auc)
    plain = [r for r in RunDir(run.path).read_metrics() if r["type"] == "step"]
    assert all("detection_recall" in r for r in plain)

    subject = load_subject(run.path)  # the Evaluation panel's and `evaluate`'s road
    assert isinstance(subject.encoder, ElectraForPreTraining) and subject.model is subject.trained.generator
    diagnosis = diagnose(subject.model, subject.tokenizer, subject.config, subject.validation, samples=0)
    assert diagnosis.accuracy == pytest.approx(final.accuracy)  # the generator's, as the trainer evaluated it
    texts = [f"{word} {i}" for i in range(20) for word in ("list sort keys", "path file folder")]
    probe = probe_task(subject.encoder, subject.tokenizer, texts, ["a", "b"] * 20)
    assert probe.accuracy >= 0.9  # two vocabularies the frozen discriminator's vectors tell apart


def test_mlm_records_have_no_detection_fields(tmp_path, small_corpus, small_tokenizer):
    run = start_run(tmp_path / "run", small_config(max_steps=2, eval_interval=2), small_corpus, small_tokenizer)
    list(Trainer(run, *training_blocks(run, small_corpus)).run())
    assert not any(k.startswith("detection") for r in run.read_metrics() for k in r)


def test_the_command_line_trains_electra_and_resumes_exactly(tmp_path, corpus_file):
    """4 steps, then 4 more from the checkpoint, end with the weights of 8 steps straight (a constant learning
    rate after warm-up, so that the run's length does not change its rates)."""
    config = tmp_path / "config.toml"
    small_config(schedule="constant").save(config)
    common = ["train", "--config", config, "--corpus", corpus_file, "--objective", "electra"]
    common += ["--set", "tokenizer.vocab_size=400", "--set", "training.checkpoint_interval=4"]
    straight, halves = tmp_path / "straight", tmp_path / "halves"
    for command in (
        [*common, "--out", straight, "--max-steps", "8"],
        [*common, "--out", halves, "--max-steps", "4"],
        ["train", "--resume", halves, "--max-steps", "8"],
    ):
        done = mlm_studio(*command)
        assert done.returncode == 0, done.stderr
    assert 'objective = "electra"' in (halves / "config.toml").read_text()
    a = load_file(str(straight / "checkpoints" / "step-0000008" / "model.safetensors"))
    b = load_file(str(halves / "checkpoints" / "step-0000008" / "model.safetensors"))
    assert set(a) == set(b) and any(k.startswith("generator.") for k in a)
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.fixture(scope="module")
def hf_pair(tmp_path_factory, small_corpus):
    """A tiny random ELECTRA discriminator and generator made and saved by `transformers`, as an export is laid
    out: the discriminator in the folder, the generator in `generator/`."""
    folder = tmp_path_factory.mktemp("electra")
    documents = list(small_corpus.iter_documents())[:300]
    tokenizer = save_tokenizer("wordpiece", documents, folder)
    save_tokenizer("wordpiece", documents, folder / "generator")
    pad = tokenizer.pad_token_id
    shape = dict(vocab_size=len(tokenizer), embedding_size=24, max_position_embeddings=64, pad_token_id=pad)
    torch.manual_seed(1)
    values = dict(initializer_range=0.3, num_hidden_layers=2, **shape)
    discriminator = transformers.ElectraConfig(hidden_size=48, num_attention_heads=4, intermediate_size=96, **values)
    generator = transformers.ElectraConfig(hidden_size=24, num_attention_heads=2, intermediate_size=48, **values)
    theirs_d = transformers.ElectraForPreTraining(discriminator).eval()
    theirs_g = transformers.ElectraForMaskedLM(generator).eval()
    theirs_g.electra.embeddings.load_state_dict(theirs_d.electra.embeddings.state_dict())  # shared, as trained
    theirs_d.save_pretrained(folder)
    theirs_g.save_pretrained(folder / "generator")
    return folder, tokenizer, theirs_d, theirs_g


def test_an_electra_pair_imports_with_logits_equal_to_transformers(hf_pair):
    folder, tokenizer, theirs_d, theirs_g = hf_pair
    imported = import_model(folder)
    assert imported.generator_size == 0.5 and not imported.fresh_head and not imported.unused
    described = f"ELECTRA discriminator 2 layers × 48, 4 heads, {theirs_d.num_parameters():,} parameters"
    assert described in imported.summary()
    ours = imported.build_model().eval()
    batch = tokenizer(["return a sorted list of the keys", "the path"], padding=True, return_tensors="pt")
    real = batch.attention_mask.bool()
    with torch.no_grad():
        d_ours = ours.discriminator(batch.input_ids, batch.attention_mask)
        g_ours = ours.generator(batch.input_ids, batch.attention_mask).logits
        d_theirs, g_theirs = theirs_d(**batch).logits, theirs_g(**batch).logits
    assert (d_ours - d_theirs)[real].abs().max() <= 1e-5
    assert (g_ours - g_theirs)[real].abs().max() <= 1e-5
    text = "return a [MASK] list of the keys"
    pipe = transformers.pipeline("fill-mask", model=str(folder / "generator"), top_k=5)(text)
    mine = FillMask.from_path(folder).predict(text, top_k=5)[0]
    assert [c.token_id for c in mine] == [row["token"] for row in pipe]
    assert [c.score for c in mine] == pytest.approx([row["score"] for row in pipe], abs=1e-5)


def test_an_electra_run_exports_folders_transformers_loads_and_continues(tmp_path, hf_pair, small_corpus):
    folder, *_ = hf_pair
    config = import_model(folder).run_config(electra_config(max_steps=2, eval_interval=2))
    run = start_run(tmp_path / "run", config, small_corpus, import_model(folder).tokenizer, import_model(folder))
    list(Trainer(run, *training_blocks(run, small_corpus)).run())
    out = export_model(run.path, tmp_path / "out")
    discriminator, info = transformers.ElectraForPreTraining.from_pretrained(out, output_loading_info=True)
    assert not any(info.values())
    generator, info = transformers.AutoModelForMaskedLM.from_pretrained(out / "generator", output_loading_info=True)
    assert type(generator).__name__ == "ElectraForMaskedLM" and not any(info.values())
    assert json.loads((out / "config.json").read_text())["architectures"] == ["ElectraForPreTraining"]
    trained = FillMask.from_path(run.path)
    again = import_model(out).build_model().eval()
    ids = torch.tensor([[2, 30, 31, 4, 32, 3]])
    with torch.no_grad():
        assert torch.allclose(again.discriminator(ids), trained.detector(ids), atol=1e-6)
        assert torch.allclose(discriminator.eval()(ids).logits, trained.detector(ids), atol=1e-5)
    flagged = trained.replaced("return a sorted list")
    assert [piece for piece, _ in flagged][:2] == ["return", "a"] and all(0 < p < 1 for _, p in flagged)
