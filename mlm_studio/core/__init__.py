"""The engine of MLM Studio. Plain Python, no Qt: usable from scripts, the CLI and torchrun."""
