"""A run exported as a `transformers` folder of its family: what `AutoModelForMaskedLM.from_pretrained` and
`AutoTokenizer.from_pretrained` read without any code of ours, with a model card and a manifest of the files
written, so a later `--overwrite` replaces exactly those and nothing a user put there."""

from __future__ import annotations

import json
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from mlm_studio.core.config.families import FAMILIES
from mlm_studio.core.config.sections import ModelConfig
from mlm_studio.core.data.tokenizer import MLMTokenizer
from mlm_studio.core.finetune.heads import architecture
from mlm_studio.core.finetune.predict import FineTuned
from mlm_studio.core.finetune.tuner import BEST
from mlm_studio.core.interop.model_card import classifier_card, model_card
from mlm_studio.core.models.build import build_trained
from mlm_studio.core.models.electra import DISCRIMINATOR, GENERATOR
from mlm_studio.core.models.hf_folder import GENERATOR_FOLDER, InteropError
from mlm_studio.core.progress import Progress
from mlm_studio.core.runs.run_folder import TASK, RunDir, choose_checkpoint
from mlm_studio.core.storage.checkpoint import listed, load_weights, save_weights
from mlm_studio.core.storage.files import atomic_write_folder, atomic_write_json
from mlm_studio.core.storage.lock import holder
from mlm_studio.core.storage.owned import NotOurs, OwnedFolder

EXPORTED_FILES = ("config.json", "model.safetensors", "tokenizer.json")  # what marks an export
MODEL_FILES = (*EXPORTED_FILES, "vocab.txt", "tokenizer_config.json", "special_tokens_map.json")
CARD = "README.md"
WRITTEN_FILES = (*MODEL_FILES, CARD, GENERATOR_FOLDER)
_CARD_MARK = "trained with MLM Studio"  # in every model card MLM Studio writes
_EDIT_MARGIN = 60.0  # seconds: an export writes its card right after its other files
# The tokenizer's id of each special-token role a family's config.json may record.
_ROLE_IDS = {"bos": "cls_id", "eos": "sep_id", "cls": "cls_id", "sep": "sep_id"}


@dataclass(frozen=True)
class ExportChoice:
    """The weights an export writes: the run they belong to, their folder, and which they are in words ("best, its
    best weights by the validation score"); `fine_tuned` when they are a fine-tuned classifier's."""

    run: RunDir
    weights: Path
    said: str
    fine_tuned: FineTuned | None
    training: str = ""  # the process that was training the run when they were taken ("" for none)

    @property
    def note(self) -> str:
        """What these weights are not ("" when nothing): a run still being trained gives its weights so far."""
        if not self.training:
            return ""
        return (
            f"{self.run.name} is still being trained by process {self.training}: {self.weights.name} holds its "
            "weights so far, not its final ones; export it again when it finishes"
        )


def export_choice(source: str | Path, best: bool = False) -> ExportChoice:
    """The weights exporting `source` writes: a checkpoint folder as given; a pre-training run's latest (or
    `best`, by validation loss) checkpoint; a fine-tuning run's best weights by the validation score (its run
    folder or its `best/` named)."""
    folder = Path(source)
    if folder.name == BEST and (folder.parent / TASK).is_file():
        run = RunDir(folder.parent)
    else:
        run, checkpoint, said = choose_checkpoint(source, best)
        if run.task is None:
            return ExportChoice(run, checkpoint, said, None, holder(run.path))
        if folder.resolve() == checkpoint.resolve():  # a checkpoint folder named: those weights
            return ExportChoice(run, checkpoint, said, FineTuned(run, checkpoint), holder(run.path))
    fine_tuned = FineTuned(run)
    weights = fine_tuned.weights
    said = (
        f"{weights.name}, its best weights by the validation score"
        if weights.name == BEST
        else f"{weights.name}, its latest checkpoint: the run has not been validated yet"
    )
    return ExportChoice(run, weights, said, fine_tuned, holder(run.path))


def export_model(
    source: str | Path, out: str | Path, best: bool = False, overwrite: bool = False, progress: Progress | None = None
) -> Path:
    """Write the weights `export_choice` takes from `source` as a `transformers` folder (see `write_export`)."""
    return write_export(export_choice(source, best), out, overwrite, progress)


def write_export(
    choice: ExportChoice, out: str | Path, overwrite: bool = False, progress: Progress | None = None
) -> Path:
    """Write the chosen weights as a `transformers` folder of their family; an ELECTRA run's as its discriminator
    (`ElectraForPreTraining`) with its generator (`ElectraForMaskedLM`) in `generator/`; a fine-tuning run's as its
    family's classifier, with its labels."""
    progress = progress or Progress()
    run, checkpoint, fine_tuned = choice.run, choice.weights, choice.fine_tuned
    run.require_finite(checkpoint, "export it")
    config = run.config
    _check_exportable(config.model)
    out = Path(out)
    _check_target(out, overwrite, run)
    progress.report(0, 3, "Reading the checkpoint")
    trained = build_trained(config) if fine_tuned is None else fine_tuned.model
    if fine_tuned is None:
        load_weights(checkpoint, trained)
    tokenizer = run.tokenizer

    def fill(folder: Path) -> None:
        progress.report(1, 3, "Writing the weights, configuration and tokenizer")
        if fine_tuned is not None:
            _write_model(folder, trained, tokenizer, config=classifier_config(fine_tuned, tokenizer))
        elif config.training.objective == "electra":
            _write_model(folder, trained.discriminator, tokenizer, DISCRIMINATOR)
            (folder / GENERATOR_FOLDER).mkdir()
            _write_model(folder / GENERATOR_FOLDER, trained.generator, tokenizer, GENERATOR)
        else:
            _write_model(folder, trained, tokenizer)
        progress.report(2, 3, "Writing the model card")
        card = (
            model_card(run, checkpoint)
            if fine_tuned is None
            else classifier_card(run, checkpoint, fine_tuned.model.task, fine_tuned.labels)
        )
        (folder / CARD).write_text(card, encoding="utf-8")
        OwnedFolder(folder).record_all()
        _check_target(out, overwrite, run)  # again, just before the old export gives way: nothing came in meanwhile

    try:
        atomic_write_folder(out, fill)
    except OSError as exc:
        raise InteropError(f"could not write {out} ({exc})") from exc
    progress.report(3, 3, "Exported")
    return out


def _write_model(
    folder: Path, model: torch.nn.Module, tokenizer: MLMTokenizer, architecture: str = "", config: dict | None = None
) -> None:
    """A model's weights, config.json (`config`, or the family's for `architecture`) and tokenizer files in
    `folder`."""
    save_weights(model, folder / "model.safetensors")
    atomic_write_json(folder / "config.json", config or hf_config(model.config, tokenizer, architecture))
    tokenizer.save(folder / "tokenizer.json")
    if tokenizer.kind == "WordPiece":
        (folder / "vocab.txt").write_text(tokenizer.vocab_txt(), encoding="utf-8")
    atomic_write_json(folder / "tokenizer_config.json", _tokenizer_config(tokenizer, model.config))
    atomic_write_json(folder / "special_tokens_map.json", tokenizer.specials.as_map())


def classifier_config(fine_tuned: FineTuned, tokenizer: MLMTokenizer) -> dict[str, Any]:
    """config.json of a fine-tuned model: its family's `…ForSequenceClassification` or `…ForTokenClassification`
    with its labels (and ModernBERT's pooling), or its `…ForQuestionAnswering`."""
    model = fine_tuned.model
    labels = fine_tuned.labels
    pooling = {"classifier_pooling": model.pooling} if model.layout == "prediction_head" else {}
    named = {
        "id2label": {str(i): label for i, label in enumerate(labels)},
        "label2id": {label: i for i, label in enumerate(labels)},
    }
    return {
        **hf_config(model.config, tokenizer),
        "architectures": [architecture(model.config.family, model.task)],
        **({} if model.task == "qa" else named),  # a question-answering head's two outputs: start and end
        **pooling,
    }


def _check_exportable(model: ModelConfig) -> None:
    family = FAMILIES[model.family]
    reasons = family.export_problems(model)
    if reasons:
        raise InteropError(
            f"this model cannot be exported as a Hugging Face {family.title}: "
            + "; ".join(reasons)
            + f". transformers would load it without error and compute something else. Train with the {family.title} "
            "layout to export."
        )


def _check_target(out: Path, overwrite: bool, run: RunDir) -> None:
    """Refuse `out` unless it is new, empty, or an earlier export that `overwrite` allows replacing, and outside
    the `run` it is exported from (a run's folders are its own: its TensorBoard logs, its checkpoints)."""
    if out.resolve().is_relative_to(run.path.resolve()):
        raise InteropError(
            f"{out} is inside the run {run.path} it would be exported from; an export goes into a folder of its "
            "own: choose one outside the run"
        )
    if replaces_export(out) and not overwrite:
        raise InteropError(f"{out} already holds an exported model; allow overwriting to replace it")


def replaces_export(out: str | Path) -> bool:
    """Whether exporting to `out` replaces an earlier export (False: `out` is new or empty). Refused, naming them,
    when it holds anything that export did not write, a file changed since (an edited model card), or a link."""
    out = Path(out)
    try:
        mode = out.lstat().st_mode
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(mode):
        raise InteropError(f"{out} is a symbolic link; export into the folder it points to, or a new one")
    if not stat.S_ISDIR(mode):
        raise InteropError(f"{out} is a file; choose a new or empty folder")
    if not any(out.iterdir()):
        return False
    try:
        owned = OwnedFolder(out)
    except NotOurs as exc:
        raise InteropError(str(exc)) from None
    if not owned.recorded:
        _take_earlier_export(owned)
    strangers = owned.strangers()
    if strangers:
        raise InteropError(
            f"{out} holds files that are not part of an export ({listed(strangers)}); nothing was changed. "
            "Choose a new or empty folder"
        )
    changed = owned.in_the_way()
    if changed:
        raise InteropError(
            f"{'; '.join(changed)}: nothing was changed. Move your version away to replace the export, or choose "
            "a new folder"
        )
    if not all(name in owned.files for name in EXPORTED_FILES):
        raise InteropError(f"{out} holds part of an export only; choose a new or empty folder")
    return True


def _take_earlier_export(owned: OwnedFolder) -> None:
    """List the files of an export made before exports kept a record of them, as they are: an export's names only
    (other names stay strangers), and only beside MLM Studio's model card, not edited after the export. Without
    the card the folder may be any Hugging Face model (their names are the same), so it is not taken."""
    out = owned.root
    names = [name for name in WRITTEN_FILES if name != GENERATOR_FOLDER]
    names += [f"{GENERATOR_FOLDER}/{name}" for name in MODEL_FILES]
    present = [name for name in names if owned.is_plain_file(name)]
    if not present:
        return  # nothing of an export: its files are strangers
    card = out / CARD
    try:
        ours = CARD in present and _CARD_MARK in card.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        ours = False
    if not ours:
        raise InteropError(
            f"{out} holds a model that MLM Studio did not export (no MLM Studio model card, no record of its files); "
            "nothing was changed. Choose a new or empty folder"
        )
    others = [(out / name).stat().st_mtime for name in present if name != CARD]
    if others and card.stat().st_mtime > max(others) + _EDIT_MARGIN:
        raise InteropError(
            f"{card} was edited after the export; nothing was changed. Move your version away to replace the "
            "export, or choose a new folder"
        )
    for name in present:
        owned.record(name)


def hf_config(model: ModelConfig, tokenizer: MLMTokenizer, architecture: str = "") -> dict[str, Any]:
    """`config.json` for the model's family (as `architecture` when the family has several), every field spelled
    out, with the tokenizer's special ids."""
    family = FAMILIES[model.family]
    ids = {f"{role}_token_id": getattr(tokenizer, _ROLE_IDS[role]) for role in family.token_ids}
    return {**family.to_hf(model, architecture), **ids}


def _tokenizer_config(tokenizer: MLMTokenizer, model: ModelConfig) -> dict[str, Any]:
    """BERT's tokenizer settings for a WordPiece vocabulary; for any other, the generic fast tokenizer that
    reads `tokenizer.json` as it is."""
    common = {
        "model_max_length": model.max_tokens(),
        "clean_up_tokenization_spaces": False,
        **tokenizer.specials.as_map(),
    }
    if tokenizer.kind != "WordPiece":
        return {"tokenizer_class": "PreTrainedTokenizerFast", **common}
    normalizer = json.loads(tokenizer.backend.to_str()).get("normalizer") or {}
    return {
        "tokenizer_class": "BertTokenizer",
        "do_lower_case": bool(normalizer.get("lowercase", False)),
        "strip_accents": normalizer.get("strip_accents"),
        "tokenize_chinese_chars": bool(normalizer.get("handle_chinese_chars", True)),
        **common,
    }
