"""Test configuration: headless Qt, an isolated cache, derandomized hypothesis in CI."""

import os
import tempfile

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["MLM_STUDIO_CACHE"] = tempfile.mkdtemp(prefix="mlm-studio-test-cache-")

from hypothesis import settings  # noqa: E402

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
