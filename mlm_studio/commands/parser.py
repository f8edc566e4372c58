"""The `mlm-studio` command: the GUI by default, and subcommands for terminals, servers and clusters."""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from collections.abc import Callable
from pathlib import Path

from mlm_studio import __version__
from mlm_studio.commands.replay import add_replay
from mlm_studio.commands.terminal import INTERRUPTED
from mlm_studio.commands.values import (
    NEGATIVE_VALUE,
    RUN_MLM_FIELDS,
    SetField,
    device,
    listed,
    meant,
    number,
    positive,
    preset_name,
    rates,
    screenshot_file,
    setting,
    spellings,
    step_range,
    time_budget,
    whole,
)
from mlm_studio.core.config.families import family_titles
from mlm_studio.core.config.presets import DEFAULT_PRESET, PRESETS
from mlm_studio.core.config.sections import (
    DEVICES,
    OBJECTIVES,
    PRECISIONS,
    REPORT_TO,
    SCHEDULES,
    STRATEGIES,
    join_words,
)
from mlm_studio.core.data.builtin_tasks import EXAMPLE_KINDS
from mlm_studio.core.data.formats import FORMATS, TABLE_FORMATS
from mlm_studio.core.evaluation.explain.choices import BASELINES, DEFAULT_METHOD, DEFAULT_STEPS, METHODS
from mlm_studio.core.finetune.pipeline_shapes import AGGREGATIONS
from mlm_studio.core.finetune.tasks import (
    COMPARE_SEEDS,
    FINETUNE_PRECISIONS,
    POOLINGS,
    SEARCH_MAX_EPOCHS,
    SEARCH_RATES,
    SEARCH_SEEDS,
    TASKS,
)
from mlm_studio.core.shown import one_line

# where `train` and `finetune` send their metrics besides metrics.jsonl (the `transformers` Trainer's option)
REPORT_TO_OPTION = {
    "choices": REPORT_TO,
    "metavar": "WHERE",
    "help": f"where the metrics go besides metrics.jsonl: {listed(REPORT_TO)} (default tensorboard); mlflow: the "
    'store MLFLOW_TRACKING_URI names (MLflow\'s default where unset), needs pip install "mlm-studio[mlflow]"',
}

# how `train` and `finetune` end when the user stops them (their --help says it)
STOPPED = (
    f"Ctrl-C stops after the current step, saves a checkpoint and exits {INTERRUPTED}, so that a script does not go "
    "on with a half-trained model (a second Ctrl-C aborts at once); --resume continues the run."
)


class Parser(argparse.ArgumentParser):
    """argparse's parser, which names the option meant when given one it does not know (`meant`)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.commands: dict[str, argparse.ArgumentParser] = {}  # each command's parser, by name

    def parse_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        parsed, unknown = self.parse_known_args(args, namespace)
        if unknown:
            command = self.commands.get(getattr(parsed, "command", None) or "", self)
            known = [option for action in command._actions for option in action.option_strings]
            self.error(f"unrecognized arguments: {' '.join(map(one_line, unknown))}{meant(unknown, known, args)}")
        return parsed

    def error(self, message: str):
        """Refuse (exit 2), and where an option's value was taken for an option (`--query -cat`), say how to
        write it."""
        option = re.fullmatch(r"argument (--[\w-]+)(?:/--?[\w-]+)*: expected one argument", message)
        if option:
            message += f" (a value that begins with '-' is written {option.group(1)}=VALUE)"
        choice = re.fullmatch(r"(.*invalid choice: )(.*)( \(choose from .*\))", message, re.DOTALL)
        if choice:  # argparse quotes the value whole: a pasted page would fill the terminal
            message = f"{choice.group(1)}{one_line(choice.group(2))}{choice.group(3)}"
        super().error(message)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="mlm-studio",
        description="MLM Studio: a workbench for masked language modeling. With no command, opens the window.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    parser.commands = commands.choices
    gui = commands.add_parser("gui", help="open the workbench window (the default)")
    for p in (parser, gui):
        p.set_defaults(run=None)  # the window: the entry point opens it
        p.add_argument(
            "--screenshot",
            metavar="FILE.png",
            type=screenshot_file,
            help="render the window offscreen on the built-in corpus, save it as a PNG and exit",
        )

    _add_train(commands)
    _add_finetune(commands)
    _add_search(commands)

    predict = commands.add_parser(
        "predict",
        help="fill the [MASK]s of a text with a trained model, or label or tag a text with a fine-tuned one",
        epilog="On a fine-tuning run (its folder, its best/ or a checkpoint of it) TEXT is labelled (a classifier), "
        "tagged (a tagger) or, with --question, is the context answered from; the options of the other kinds of "
        "model are refused.",
    )
    predict.add_argument(
        "model",
        type=Path,
        metavar="MODEL",
        help="a run folder, one of its checkpoint folders, a Hugging Face folder, the Hub name of a model in the "
        "local cache, or a fine-tuning run",
    )
    predict.add_argument(
        "text",
        metavar="TEXT",
        nargs="?",
        help='a text with one or more [MASK], e.g. "Return the [MASK] of the list."; for a fine-tuned model, the '
        "text to label or tag (the context, with --question); - reads texts one a line from standard input and "
        "prints one answer a line (JSON lines with --json; a classifier of pairs reads TEXT, a tab, TEXT2)",
    )
    predict.add_argument(
        "--text-file", type=Path, metavar="FILE", help="texts one a line (UTF-8), in place of TEXT, as - reads them"
    )
    predict.add_argument(
        "--top-k",
        type=whole,
        metavar="K",
        help="candidates per mask (default 5); a fine-tuned classifier's labels (default all); a question-answering "
        "model's answers (default 1)",
    )
    predict.add_argument(
        "--json",
        action="store_true",
        help="print JSON as pipeline('fill-mask') does (with --fill: the text and each mask's candidates); for a "
        "fine-tuned model as pipeline('text-classification'), ('token-classification') or (transformers 4) "
        "('question-answering')",
    )
    predict.add_argument("--fill", action="store_true", help="fill masks one by one, most confident first")
    predict.add_argument("--pair", metavar="TEXT2", help="the second text, for a classifier fine-tuned on pairs")
    predict.add_argument("--question", metavar="Q", help="the question, for a question-answering model")
    predict.add_argument(
        "--aggregation",
        choices=AGGREGATIONS,
        help="a tagger's --json, as the pipeline's aggregation_strategy: its entities, each word tagged as its first "
        "piece (first, the default: what the table and the window show), every piece grouped by its own tag "
        "(simple), or every tagged token (none)",
    )
    predict.add_argument(
        "--device", type=device, default="cpu", help=f"where to predict: {listed(DEVICES)} (default cpu)"
    )
    _add_explain(predict)
    predict.set_defaults(run=_deferred("predict"))

    evaluate = commands.add_parser(
        "evaluate", help="where a model is right and wrong on held-out text, and whether it helps a labelled task"
    )
    evaluate.add_argument("model", metavar="RUN_OR_FOLDER", help="a run, a checkpoint, or a Hugging Face model")
    evaluate.add_argument("--checkpoint", type=whole, metavar="STEP", help="the run's checkpoint of this step")
    evaluate.add_argument(
        "--corpus", nargs="+", metavar="PATH", help="text to score on (a Hugging Face model needs it)"
    )
    evaluate.add_argument("--task", type=Path, metavar="FILE", help=f"labelled texts: {TABLE_FORMATS}")
    evaluate.add_argument("--text-column", default="text", help="the task file's text column (default text)")
    evaluate.add_argument("--label-column", default="label", help="the task file's label column (default label)")
    evaluate.add_argument("--json", action="store_true", help="print one JSON object")
    evaluate.set_defaults(run=_deferred("evaluate"))

    events = commands.add_parser(
        "tensorboard", help="write TensorBoard events for runs made before (from their metrics.jsonl)"
    )
    events.add_argument("runs", type=Path, nargs="+", metavar="RUN_DIR")
    events.set_defaults(run=_deferred("tensorboard"))

    desktop = commands.add_parser(
        "install-desktop", help="add MLM Studio to the system's launcher (XDG: entry, icons, metadata)"
    )
    desktop.add_argument("--uninstall", action="store_true", help="remove exactly the files it installed")
    desktop.set_defaults(run=_deferred("install_desktop"))

    export = commands.add_parser("export", help="write a run as a Hugging Face transformers folder")
    export.add_argument("model", type=Path, metavar="RUN_OR_CHECKPOINT", help="a run folder or a checkpoint folder")
    export.add_argument("out", type=Path, metavar="OUT_DIR", help="the folder to write (new or empty)")
    export.add_argument("--best", action="store_true", help="the checkpoint with the lowest validation loss")
    export.add_argument("--overwrite", action="store_true", help="replace an earlier export in OUT_DIR")
    export.set_defaults(run=_deferred("export"))
    add_replay(commands)
    for each in (parser, *commands.choices.values()):
        each._negative_number_matcher = NEGATIVE_VALUE
    return parser


def _add_train(commands) -> None:
    """`train`: its own options, `--set`, and run_mlm.py's names."""
    train = commands.add_parser(
        "train",
        help="train a model from the terminal (multi-GPU: torchrun --nproc_per_node=N -m mlm_studio train …)",
        epilog=STOPPED,
    )
    train.set_defaults(run=_deferred("train"))
    train.add_argument(
        "--config", type=Path, metavar="FILE", help="a run configuration: TOML (as MLM Studio saves it) or JSON"
    )
    train.add_argument(
        "--preset", type=preset_name, metavar="NAME", help=f"a preset: {listed(PRESETS, DEFAULT_PRESET)}"
    )
    train.add_argument(
        *spellings("corpus", "train_file"),
        type=Path,
        nargs="+",
        metavar="PATH",
        help=f"files or folders: {FORMATS}; or hf:org/name, a Hub dataset already in the local Hugging Face "
        "cache (default: the built-in corpus)",
    )
    train.add_argument(
        "--tokenizer", type=Path, metavar="PATH", help="tokenizer.json or vocab.txt (default: train one)"
    )
    train.add_argument(
        *spellings("out", "output_dir"),
        type=Path,
        metavar="RUN_DIR",
        help="the run folder (default: <date>-<preset>, or -continued for --init-from, in the window's runs folder; "
        "MLM_STUDIO_RUNS overrides it)",
    )
    train.add_argument("--resume", type=Path, metavar="RUN_DIR", help="continue a run from its latest checkpoint")
    train.add_argument("--branch", type=Path, metavar="RUN_DIR", help="a new run from RUN_DIR's checkpoint at K")
    train.add_argument("--from-step", type=whole, metavar="K", help="the step of --branch's checkpoint")
    train.add_argument("--skip-batches", type=step_range, metavar="A:B", help="--branch skips steps A+1…B's batches")
    train.add_argument(
        *spellings("init_from", "model_name_or_path"),
        type=Path,
        metavar="HF_DIR",
        help=f"continue pre-training a Hugging Face folder of a {join_words(family_titles(), 'or')} model, or the "
        "Hub name of one in the local cache (its architecture and tokenizer are kept)",
    )
    train.add_argument(*spellings("max_steps"), type=whole, metavar="N", help="optimizer steps in total")
    train.add_argument(
        *spellings("time_budget"),
        type=time_budget,
        metavar="TIME",
        help="train for this long (90s, 6m, 1h30m); the learning-rate schedule follows the clock",
    )
    train.add_argument(
        "--objective",
        choices=OBJECTIVES,
        help=f"the training objective: {listed(OBJECTIVES)} (electra: replaced-token detection; the model becomes "
        "an ELECTRA of its size)",
    )
    train.add_argument("--device", type=device, help=f"where to train: {listed(DEVICES)}")
    train.add_argument("--precision", choices=PRECISIONS, help=f"the precision: {listed(PRECISIONS)}")
    train.add_argument(
        "--set",
        dest="settings",
        action="append",
        type=setting,
        default=[],
        metavar="SECTION.FIELD=VALUE",
        help="any configuration field, repeatable: --set model.hidden_size=512 --set masking.strategy=span "
        f"(masking.strategy: {listed(STRATEGIES)}; training.schedule: {listed(SCHEDULES)})",
    )
    train.add_argument(*spellings("report_to"), **REPORT_TO_OPTION, dest="settings", action=SetField,
                       field="training.report_to")  # fmt: skip
    aliases = train.add_argument_group("run_mlm.py's names (dashes or underscores), each the field it sets")
    for name, (field, kind) in RUN_MLM_FIELDS.items():
        aliases.add_argument(
            *spellings(name), dest="settings", action=SetField, field=field, type=kind, metavar="V", help=field
        )
    for precision in ("bf16", "fp16"):
        aliases.add_argument(
            f"--{precision}",
            dest="settings",
            action=SetField,
            field="training.precision",
            const=precision,
            nargs=0,
            help=f"training.precision = {precision}",
        )


def _add_search(commands) -> None:
    """`search`: a corpus's documents nearest a query, and same-label neighbours of a labelled file."""
    search = commands.add_parser("search", help="find the documents of a corpus nearest a query, by a model's vectors")
    search.add_argument("model", metavar="MODEL", help="a run, a checkpoint, or a Hugging Face model")
    search.add_argument("--corpus", nargs="+", metavar="PATH", help=f"the documents --query searches: {FORMATS}")
    search.add_argument("--query", action="append", metavar="TEXT", help="what to search for (repeatable)")
    search.add_argument("--k", type=positive, default=10, help="documents per query, neighbours scored (default 10)")
    search.add_argument("--layer", type=positive, metavar="N", help="the encoder layer read (default the last)")
    search.add_argument("--task", type=Path, metavar="FILE", help=f"labelled texts scored by recall@k and MRR: "
                        f"{TABLE_FORMATS}")  # fmt: skip
    search.add_argument("--text-column", default="text", help="the task file's text column (default text)")
    search.add_argument("--label-column", default="label", help="the task file's label column (default label)")
    search.add_argument("--json", action="store_true", help="print one JSON object")
    search.set_defaults(run=_deferred("search"))


def _add_finetune(commands) -> None:
    """`finetune`: a model fine-tuned on a labelled file, defaults from the published fine-tuning recipes (the
    engine's: an option left out is None here, so that a resumed run can tell what was given)."""
    tune = commands.add_parser(
        "finetune",
        help="fine-tune a model on labelled texts or tagged words",
        epilog=f"{STOPPED} With --compare or --search, rerunning the same command with the same --out continues the "
        "comparison or the search.",
    )
    tune.set_defaults(run=_deferred("finetune"))
    tune.add_argument(
        "model",
        nargs="?",
        metavar="MODEL",
        help="a run folder or checkpoint, a Hugging Face folder or cached Hub model, or scratch:MODEL for the same "
        "shape with fresh weights",
    )
    tune.add_argument(
        "--task",
        "--train",
        type=Path,
        metavar="FILE",
        help=f"the labelled file: {TABLE_FORMATS}; for tokens also CoNLL; for qa SQuAD .json or a table (a second "
        "text column makes a classifier of pairs)",
    )
    tune.add_argument("--kind", choices=TASKS, help="a label per text or text pair, a tag per word, or an answer")
    example = "a built-in example task in place of --task (without --task: the --kind's own, else classification)"
    tune.add_argument("--example", choices=EXAMPLE_KINDS, help=example)
    tune.add_argument("--validation", type=Path, metavar="FILE", help="your own validation file (with --test)")
    tune.add_argument("--test", type=Path, metavar="FILE", help="your own test file (else an 80/10/10 split)")
    tune.add_argument("--out", type=Path, metavar="RUN_DIR", help="the new run's folder (default: under the runs)")
    tune.add_argument("--resume", type=Path, metavar="RUN_DIR", help="continue a stopped fine-tuning run")
    tune.add_argument("--text-column", default="", help="the text (or tokens) column, if not a usual name")
    tune.add_argument("--label-column", default="", help="the label (or tags) column, if not a usual name")
    tune.add_argument("--pair-column", default="", help="a second text column, for text pairs")
    tune.add_argument(
        "--lr",
        type=number,
        help="peak learning rate (default: measured, 3e-4 for a model under 10M parameters on fewer than 1,000 "
        "training examples, else 1e-4; --search finds the best)",
    )
    tune.add_argument("--epochs", type=number, help="passes over the training examples at most (default 10)")
    tune.add_argument("--batch-size", type=whole, help="examples per micro-batch (default 16)")
    accumulation = (
        "micro-batches per step (default 1): a step learns from N × --batch-size examples in the memory of one"
    )
    tune.add_argument("--grad-accumulation", type=whole, metavar="N", help=accumulation)
    tune.add_argument("--warmup", type=number, help="share of the steps warming up (default 0.06)")
    tune.add_argument("--weight-decay", type=number, help="AdamW weight decay (default 0.01)")
    tune.add_argument(
        "--freeze-layers", type=whole, metavar="N", help="leave the embeddings and N first layers untrained"
    )
    tune.add_argument("--patience", type=whole, help="evaluations without improvement before stopping (default 2)")
    tune.add_argument("--eval-every", type=whole, metavar="STEPS", help="evaluate every STEPS (default: each epoch)")
    tune.add_argument("--max-length", type=whole, metavar="TOKENS", help="cut examples to this many tokens")
    tune.add_argument("--pooling", choices=POOLINGS, help="ModernBERT's classifier: first token or mean")
    stride = "qa: tokens two windows of a long context share (default 128)"
    tune.add_argument("--doc-stride", type=whole, metavar="TOKENS", help=stride)
    tune.add_argument(
        "--max-answer-length", type=whole, metavar="TOKENS", help="qa: tokens of the longest answer (default 30)"
    )
    tune.add_argument("--seed", type=whole, help="split, head and order seed (default 0)")
    tune.add_argument("--device", type=device, help=f"where to train: {listed(DEVICES)} (default auto)")
    tune.add_argument(
        "--precision",
        choices=FINETUNE_PRECISIONS,
        help="auto (the default): bf16 where the processor computes it natively, else fp32; evaluation is in fp32",
    )
    tune.add_argument(*spellings("report_to"), **REPORT_TO_OPTION)
    tune.add_argument(
        "--compare",
        action="store_true",
        help="also fine-tune the model MODEL started from (if imported) and the same shape from scratch, same seeds",
    )
    tune.add_argument(
        "--seeds",
        type=whole,
        help=f"with --compare: seeds per model (default {COMPARE_SEEDS}); with --search: seeds "
        f"the better half of the learning rates runs (default {SEARCH_SEEDS})",
    )
    tune.add_argument(
        "--search",
        action="store_true",
        help="search the learning rate and epochs on the validation split: each of --lrs fine-tuned to --max-epochs "
        "with early stopping, the better half on more seeds; prints the table and the chosen recipe",
    )
    tune.add_argument(
        "--lrs", metavar="LR,LR,…", help=f"with --search: the learning rates tried (default {rates(SEARCH_RATES)})"
    )
    tune.add_argument(
        "--max-epochs",
        type=whole,
        metavar="N",
        help=f"with --search: a run's most epochs (default {SEARCH_MAX_EPOCHS})",
    )
    tune.add_argument("--json", action="store_true", help="print the result as one JSON object")


def _deferred(command: str) -> Callable[[argparse.Namespace], int]:
    """The `run` of the command's own module, imported when it runs: the parser and the window start without
    torch."""
    return lambda args: importlib.import_module(f"mlm_studio.commands.{command}").run(args)


def _add_explain(predict) -> None:
    """`predict`'s options that explain a prediction instead of listing candidates."""
    predict.add_argument(
        "--explain",
        nargs="?",
        const=DEFAULT_METHOD,
        choices=list(METHODS),
        metavar="METHOD",
        help=f"why the model predicts a word at a [MASK]: each word's attribution by {listed(METHODS)} "
        f"(default {DEFAULT_METHOD}: {METHODS[DEFAULT_METHOD][0]}); with --json the method and each word's score",
    )
    predict.add_argument(
        "--mask",
        type=whole,
        metavar="N",
        help="with --explain, which [MASK] (a fine-tuned tagger: which word's tag) (default 1)",
    )
    predict.add_argument(
        "--candidate",
        metavar="TOKEN",
        help="with --explain, the word explained as the vocabulary spells it (default the most likely)",
    )
    predict.add_argument(
        "--steps",
        type=whole,
        metavar="N",
        help=f"with --explain ig, the integration's steps (default {DEFAULT_STEPS})",
    )
    predict.add_argument(
        "--baseline",
        choices=BASELINES,
        default=BASELINES[0],
        help="with --explain ig, the text it integrates from: every word masked (mask, the default) or padding",
    )
