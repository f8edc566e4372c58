"""What an explanation costs and whether it can be trusted, on a trained run (by default one of the default
preset trained here for --time-budget on the built-in corpus): the time to explain a 64-piece sentence by each
method and to record its attention; integrated gradients against Captum's (when installed: same answer, time);
completeness against the number of steps; occlusion's agreement with integrated gradients; attributions after
cascading randomisation (Adebayo et al. 2018). Masks of documents the run never read (the built-in corpus's last).

Run: python benchmarks/bench_explain.py [--run RUN_DIR] [--time-budget 6m] [--masks 40]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import alternate, machine, summary

from mlm_studio.core.data.builtin_corpus import ensure_builtin_corpus
from mlm_studio.core.data.corpus import load_corpus
from mlm_studio.core.evaluation.explain.attention import attention_maps
from mlm_studio.core.evaluation.explain.attributions import Explainer
from mlm_studio.core.evaluation.explain.choices import DEFAULT_STEPS
from mlm_studio.core.evaluation.explain.methods import PATH_BATCH, word_embeddings
from mlm_studio.core.evaluation.explain.sanity import (
    cascading_randomisation,
    completeness_errors,
    occlusion_agreement,
    rank_correlation,
)
from mlm_studio.core.evaluation.predict import FillMask
from mlm_studio.core.models.build import build_trained, masked_lm_of
from mlm_studio.core.runs.run_folder import resolve_checkpoint


def held_out_texts(explainer: Explainer, count: int, pieces: int | None = None) -> list[str]:
    """Sentences from the built-in corpus's last documents, one word of each masked (seeded); with `pieces`,
    cut to that many pieces, [CLS] and [SEP] included."""
    documents = list(load_corpus([ensure_builtin_corpus()]).iter_documents())[-max(4 * count, 200) :]
    rng = np.random.default_rng(0)
    texts = []
    for document in documents:
        words = document.split()
        if pieces is None:
            words = words[:14]
        else:
            while len(words) > 2 and len(explainer.read(" ".join(words)).ids) > pieces:
                words = words[:-1]
            if len(explainer.read(" ".join(words)).ids) != pieces:
                continue
        if len(words) >= 8:
            words[int(rng.integers(1, len(words) - 1))] = "[MASK]"
            texts.append(" ".join(words))
    return texts[:count]


def captum_comparison(explainer: Explainer, text: str, repeats: int) -> str:
    try:
        from captum.attr import LayerIntegratedGradients
    except ImportError:
        return "Captum is not installed: `pip install captum` to compare"
    words = explainer.read(text)
    ids = words.tensor
    where = explainer.mask_positions(words)[0]
    ours = explainer.explain(text, method="ig")
    label = ours.candidate_id
    baseline = explainer._baseline_ids(words, "mask")

    def forward(batch: torch.Tensor) -> torch.Tensor:
        return explainer._outputs(batch, None, torch.full((len(batch),), where))[:, label]

    reference = LayerIntegratedGradients(forward, word_embeddings(explainer.model))

    def captum() -> np.ndarray:
        pieces = reference.attribute(ids, baseline, n_steps=DEFAULT_STEPS, internal_batch_size=PATH_BATCH)
        return words.per_word(pieces.sum(-1)[0].detach().double().numpy())

    difference = np.abs(captum() - np.asarray(ours.scores)).max()
    times = alternate({"ours": lambda: explainer.explain(text, method="ig"), "captum": captum}, repeats)
    ratio = statistics.median(times["captum"]) / statistics.median(times["ours"])
    return (
        f"Captum LayerIntegratedGradients (gausslegendre, {DEFAULT_STEPS} steps, batches of {PATH_BATCH}): "
        f"{summary(times['captum'])}; ours {summary(times['ours'])}; Captum/ours {ratio:.2f}×; largest difference "
        f"in a word's score {difference:.2e} logits"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--run", type=Path, help="a trained run folder (default: train the default preset)")
    parser.add_argument("--time-budget", default="6m")
    parser.add_argument("--masks", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        run = args.run
        if run is None:
            run = Path(tmp) / "run"
            command = ["train", "--time-budget", args.time_budget, "--out", str(run)]
            subprocess.run([sys.executable, "-m", "mlm_studio", *command], check=True)
        predictor = FillMask.from_path(run)
        explainer = Explainer.of(predictor)
        config = predictor.model.config
        print(f"{predictor.source}: {config.family} {config.num_hidden_layers}×{config.hidden_size}; {machine()}")

        sentence = held_out_texts(explainer, 1, pieces=64)[0]
        methods = ["ig", "occlusion"] + ([] if config.family == "modernbert" else ["gradxinput"])
        calls = {method: (lambda m=method: explainer.explain(sentence, method=m)) for method in methods}
        calls["attention"] = lambda: attention_maps(explainer.model, explainer.tokenizer, explainer.read(sentence))
        for name, seconds in alternate(calls, args.repeats).items():
            print(f"64 pieces, {name}: {summary(seconds)}")
        print(captum_comparison(explainer, sentence, args.repeats))

        texts = held_out_texts(explainer, args.masks)
        for steps in (8, 16, 32, 64):
            errors = completeness_errors(explainer, texts, steps)
            print(
                f"completeness, {steps} steps: within 1% on {np.mean(errors <= 0.01):.0%} of {len(texts)} masks; "
                f"median error {np.median(errors):.2%}, largest {errors.max():.2%}"
            )
        for top in (1, 3):
            share = occlusion_agreement(explainer, texts, top)
            print(f"occlusion's strongest word among integrated gradients' top {top}: {share:.0%} of masks")

        copy = masked_lm_of(build_trained(resolve_checkpoint(run)[0].config)).eval()
        copy.load_state_dict(predictor.model.state_dict())
        sample = texts[:10]
        before = {m: [explainer.explain(t, method=m) for t in sample] for m in methods if m != "occlusion"}
        for part in cascading_randomisation(copy):
            randomised = Explainer(copy, explainer.tokenizer)
            line = []
            for method, trained in before.items():
                after = [
                    randomised.explain(t, method=method, candidate=b.candidate_id) for t, b in zip(sample, trained)
                ]
                correlation = np.mean([rank_correlation(b.scores, a.scores) for b, a in zip(trained, after)])
                line.append(f"{method} {correlation:.2f}")
            print(f"randomised down to the {part}: Spearman with the trained model's attributions: {', '.join(line)}")


if __name__ == "__main__":
    main()
