"""What a test module running every framework needs: each framework installed.

CI installs every extra, so there a missing framework fails the module loudly; elsewhere the
module is skipped.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Final

import pytest

# The import names of the frameworks the integrations instrument (pydantic-ai, the OpenAI Agents
# SDK, LangChain).
FRAMEWORK_PACKAGES: Final = ("pydantic_ai", "agents", "langchain")


def every_framework() -> None:
    """Skip the calling module (fail it in CI) unless every framework is importable."""
    missing = [package for package in FRAMEWORK_PACKAGES if importlib.util.find_spec(package) is None]
    if missing:  # pragma: no cover - CI installs every extra
        if os.environ.get("CI"):
            raise RuntimeError(f"{missing} not installed; CI installs every framework extra")
        pytest.skip(f"{missing} not installed", allow_module_level=True)
