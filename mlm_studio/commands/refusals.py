"""What a command reports as one sentence and exit 1: the errors the engine raises for what a user gave it (a
configuration, a corpus, a tokenizer, a checkpoint, a text to predict, a file the system refused)."""

from __future__ import annotations

from mlm_studio.core.config.sections import ConfigError
from mlm_studio.core.data.corpus import CorpusError
from mlm_studio.core.data.tokenizer import TokenizerError
from mlm_studio.core.evaluation.predict import PredictError
from mlm_studio.core.storage.checkpoint import CheckpointError

USER_ERRORS = (ConfigError, CorpusError, TokenizerError, CheckpointError, PredictError, ValueError, OSError)
