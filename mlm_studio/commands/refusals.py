"""What a command reports as one sentence and exit 1: a refusal of what the user gave it (`UserError`: a
configuration, a corpus, a tokenizer, a checkpoint, a task, a text) or a file the system refused (`OSError`, in the
system's words). Anything else is a bug, which `cli.main` says as one."""

from __future__ import annotations

from mlm_studio.core.errors import UserError

USER_ERRORS = (UserError, OSError)
