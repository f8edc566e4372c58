"""The `mlm-studio` command: the GUI by default, and subcommands for terminals and servers."""

from __future__ import annotations

import argparse
from pathlib import Path

from mlm_studio import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mlm-studio",
        description="MLM Studio: a workbench for masked language modeling. With no command, opens the window.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    gui = commands.add_parser("gui", help="open the workbench window (the default)")
    for p in (parser, gui):
        p.add_argument(
            "--screenshot",
            metavar="FILE.png",
            type=Path,
            help="render the window offscreen on the built-in corpus, save it as a PNG and exit",
        )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command in (None, "gui"):
        from mlm_studio.ui.app import run_gui

        return run_gui(screenshot=args.screenshot)
    raise AssertionError(f"unhandled command {args.command}")
