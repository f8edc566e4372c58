"""`mlm-studio export`: a run, its best checkpoint or a checkpoint folder written as a Hugging Face
`transformers` folder, with how to load it."""

from __future__ import annotations

import json
import sys

from mlm_studio.commands.refusals import USER_ERRORS
from mlm_studio.commands.terminal import Status, fail, reason
from mlm_studio.core.finetune.heads import CLASS_NAMES
from mlm_studio.core.interop.export import export_choice, write_export
from mlm_studio.core.models.hf_folder import GENERATOR_FOLDER


def run(args) -> int:
    """Write a run (latest or best checkpoint) or a checkpoint folder as a Hugging Face `transformers` folder."""
    try:
        choice = export_choice(args.model, args.best)
        out = write_export(choice, args.out, overwrite=args.overwrite, progress=Status())
    except USER_ERRORS as exc:
        return fail(reason(exc))
    if sys.stderr.isatty():
        print("\r\033[K", end="", file=sys.stderr)
    print(f"Took {choice.said}.")
    if choice.note:
        print(f"mlm-studio: warning: {choice.note}", file=sys.stderr)
    generator = out / GENERATOR_FOLDER
    if generator.is_dir():
        print(
            f"Exported to {out}; load the discriminator with ElectraForPreTraining.from_pretrained({str(out)!r}), "
            f"the generator with AutoModelForMaskedLM.from_pretrained({str(generator)!r})"
        )
    else:
        architecture = json.loads((out / "config.json").read_text(encoding="utf-8"))["architectures"][0]
        head = next((h for h in CLASS_NAMES.values() if architecture.endswith(h)), "ForMaskedLM")
        print(f"Exported to {out}; load it with AutoModel{head}.from_pretrained({str(out)!r})")
    return 0
