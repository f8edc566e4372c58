"""The values the command line's options take, each checked as it is parsed so that a wrong one is refused
(exit 2) in a sentence that names the option, before any work: presets, devices, durations, --set settings,
numbers and lists of them."""

from __future__ import annotations

import argparse
import difflib
import math
import os
import re
from pathlib import Path

from mlm_studio.commands.terminal import PATH_CHARS
from mlm_studio.core.config.presets import DEFAULT_PRESET, PRESETS
from mlm_studio.core.config.sections import (
    DEVICES,
    MAX_TIME_BUDGET,
    join_words,
    valid_device,
)
from mlm_studio.core.shown import MAX_WHOLE_NUMBER, one_line, shown


def preset_name(text: str) -> str:
    if text not in PRESETS:
        raise argparse.ArgumentTypeError(f"{shown(text)} is not a preset: choose {listed(PRESETS, DEFAULT_PRESET)}")
    return text


# What argparse takes for a value rather than an option: a word that begins with '-' and a digit (no option does).
# Before Python 3.14 it took only plain negative numbers, so `--lr -1e-3` and `--time-budget -5m` were refused as a
# missing value; now the value's own check says what is allowed.
NEGATIVE_VALUE = re.compile(r"^-\.?\d")


def said(text: str) -> str:
    """A value typed on the command line as a refusal quotes it (`shown`), a number of more digits than any setting
    takes by its length."""
    number = re.fullmatch(r"\s*[-+]?(\d+)(\.\d*)?([eE][-+]?\d+)?\s*", text)
    if number and len(number.group(1)) > len(str(MAX_WHOLE_NUMBER)) - 1:
        return f"a number of {len(number.group(1)):,} digits"
    return shown(text)


def whole(text: str) -> int:
    """A whole number, as `int` reads it; refused in one short sentence (argparse's own quotes the text whole)."""
    if said(text).startswith("a number of"):
        raise argparse.ArgumentTypeError(f"{said(text)} is more than any setting takes")
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{said(text)} is not a whole number") from None


def step_range(text: str) -> tuple[int, int]:
    """`A:B`, two steps (whole numbers, 0 or more): the batches of steps A + 1 … B."""
    first, colon, last = text.partition(":")
    try:
        ends = int(first), int(last)
    except ValueError:
        ends = None
    if not colon or ends is None or min(ends) < 0:
        raise argparse.ArgumentTypeError(f"{said(text)} is not A:B, two steps such as 100:300") from None
    return ends


def number(text: str) -> float:
    """A number, as `float` reads it; one too large for a float is refused rather than taken as infinity."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{said(text)} is not a number") from None
    if math.isinf(value) and "inf" not in text.lower():
        raise argparse.ArgumentTypeError(f"{said(text)} is more than any setting takes")
    return value


def positive(text: str) -> int:
    value = whole(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{said(text)} is not a whole number of at least 1")
    return value


# run_mlm.py's argument names and the field each means here.
RUN_MLM_FIELDS = {
    "learning_rate": ("training.learning_rate", number),
    "num_train_epochs": ("training.epochs", number),
    "per_device_train_batch_size": ("training.batch_size", whole),
    "gradient_accumulation_steps": ("training.grad_accumulation", whole),
    "warmup_steps": ("training.warmup_steps", whole),
    "weight_decay": ("training.weight_decay", number),
    "max_seq_length": ("data.max_seq_len", whole),
    "mlm_probability": ("masking.rate", number),
    "seed": ("training.seed", whole),
}


# `transformers`' names (its Trainer's and example scripts') for what `finetune` names otherwise
TRANSFORMERS_NAMES = {
    "learning_rate": "lr",
    "num_train_epochs": "epochs",
    "per_device_train_batch_size": "batch_size",
    "warmup_ratio": "warmup",
    "output_dir": "out",
    "max_seq_length": "max_length",
    "train_file": "task",
    "validation_file": "validation",
    "test_file": "test",
}


# what one command calls an option that the other names otherwise: candidates, the first the command has wins
OTHER_NAMES = {"steps": ("max_steps", "epochs"), "max_steps": ("epochs",)}


def meant(unknown: list[str], known: list[str], given: list[str] = ()) -> str:
    """The option of `known` the first option of `unknown` stands for (`transformers`' name for it, the other
    command's, a close spelling, or for `--set SECTION.FIELD=…` where there is none, the field's own option), as
    "; did you mean --lr?"; "" when none is close. `given`: the whole command line, where a word after an unknown
    `--set` was taken for a positional argument."""
    options: dict[str, str] = {}
    for option in known:
        if option.startswith("--"):
            options.setdefault(option[2:].replace("-", "_"), option)
    for at, word in enumerate(unknown):
        if not word.startswith("--"):
            continue
        name = word[2:].split("=", 1)[0].replace("-", "_").lower()
        if name == "set" and "set" not in options:  # the field's own option: --set training.learning_rate=…
            value = word.partition("=")[2] or _after(word, unknown[at:]) or _after(word, list(given))
            name = value.partition("=")[0].rpartition(".")[2].replace("-", "_").lower()
        other = next((ours for ours in OTHER_NAMES.get(name, ()) if ours in options), None)
        if other is not None:
            return f"; did you mean {options[other]}?"
        close = difflib.get_close_matches(name, list(options), n=1, cutoff=0.75)
        # `transformers`' name for a finetune option, or (on train, which takes run_mlm.py's) finetune's for it
        theirs = next((them for them, ours in TRANSFORMERS_NAMES.items() if ours == name and them in options), None)
        found = TRANSFORMERS_NAMES.get(name) if TRANSFORMERS_NAMES.get(name) in options else theirs
        found = found or next(iter(close), None)
        if found is not None:
            return f"; did you mean {options[found]}?"
    return ""


def _after(word: str, words: list[str]) -> str:
    """The word after the first `word` in `words`; "" where none follows it."""
    at = words.index(word) if word in words else len(words)
    return words[at + 1] if at + 1 < len(words) else ""


def rates(values) -> str:
    return ",".join(f"{value:g}" for value in values)


def listed(names, default: str | None = None) -> str:
    """The choices for people: "a, b or c", the default marked."""
    return join_words([f"{name} (the default)" if name == default else name for name in names], "or")


def spellings(*names: str) -> list[str]:
    """--some-name and --some_name for each name."""
    return list(dict.fromkeys("--" + name.replace("_", sep) for name in names for sep in ("-", "_")))


class SetField(argparse.Action):
    """Appends (field, value) to `settings`, as --set does."""

    def __init__(self, option_strings, dest, field: str, **kwargs) -> None:
        self.field = field
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        value = self.const if self.nargs == 0 else values
        getattr(namespace, self.dest).append((self.field, value))


def setting(text: str) -> tuple[str, object]:
    """SECTION.FIELD=VALUE, the value read as TOML reads it (numbers, true/false), else as text."""
    from mlm_studio.core.config.run_config import value_from_text

    key, equals, value = text.partition("=")
    named = RUN_MLM_FIELDS.get(key.strip().lstrip("-").replace("-", "_").lower())
    if equals and named is not None:  # run_mlm.py's name for a field: its own option says it
        option = spellings(key.strip().lstrip("-").replace("-", "_").lower())[0]
        raise argparse.ArgumentTypeError(
            f"{shown(text)}: write {option} {shown(value)[1:-1]} or --set {named[0]}=VALUE"
        )
    if not equals or "." not in key:
        from mlm_studio.core.config.run_config import setting_meant

        field = setting_meant(key.strip().lstrip("-"))
        example = f"{field}={value.strip() or 'VALUE'}" if field else "training.learning_rate=1e-3"
        raise argparse.ArgumentTypeError(f"{shown(text)}: write SECTION.FIELD=VALUE, e.g. {shown(example)[1:-1]}")
    read = value_from_text(value.strip())
    overflowed = isinstance(read, float) and math.isinf(read) and "inf" not in value.lower()  # 1e999: not infinity
    if overflowed or said(value).startswith("a number of"):
        raise argparse.ArgumentTypeError(f"{one_line(key.strip())}: {said(value)} is more than any setting takes")
    return key.strip(), read


def screenshot_file(text: str) -> Path:
    """Where the window's picture goes: a file in a folder that is there and can be written, refused before the
    window trains (naming the folder) rather than after."""
    path = Path(text)
    folder = one_line(str(path.parent), PATH_CHARS)
    if not text or path.is_dir():
        what = f"{one_line(text, PATH_CHARS)} is a folder" if text else "the name is empty"
        raise argparse.ArgumentTypeError(f"{what}: give the PNG file to write, such as {path / 'window.png'}")
    if not path.parent.exists():
        raise argparse.ArgumentTypeError(
            f"the folder {folder} does not exist: make it first, or give a file in a folder that does"
        )
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"{folder} is a file, not a folder: give a file in a folder")
    if not os.access(path.parent, os.W_OK):
        raise argparse.ArgumentTypeError(
            f"the folder {folder} cannot be written: give a file in a folder you can write"
        )
    return path


def device(text: str) -> str:
    if not valid_device(text):
        raise argparse.ArgumentTypeError(f"{shown(text)} is not a device: write {listed(DEVICES)}")
    return text


TIME_BUDGET = "a time budget is how long to train, like 90s, 6m or 1h30m (0 for none), at most 366 days"


def time_budget(text: str) -> float:
    """Seconds of a time budget (`parse_duration`); a negative, unreadable or longer one refused in a sentence that
    says what a time budget is."""
    from mlm_studio.core.durations import parse_duration

    if text.strip().startswith("-"):
        raise argparse.ArgumentTypeError(f"{said(text)} is negative: {TIME_BUDGET}")
    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        if str(exc).startswith("a number of"):  # more digits than a float holds, said by their count
            raise argparse.ArgumentTypeError(str(exc)) from None
        raise argparse.ArgumentTypeError(f"{said(text)} is not a duration: {TIME_BUDGET}") from None
    if seconds > MAX_TIME_BUDGET:
        raise argparse.ArgumentTypeError(f"{said(text)} is more than 366 days: {TIME_BUDGET}")
    return seconds
