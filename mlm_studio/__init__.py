"""MLM Studio: a desktop workbench for masked language modeling."""

__version__ = "0.1.0"
