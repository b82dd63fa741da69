"""Names a package hands out on first use, each read from the one module that owns it.

A package's ``__getattr__`` calls :func:`load`, so importing the package costs nothing
until a name is asked for, and then only that name's home is imported.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any


def load(package: str, homes: Mapping[str, str], name: str, namespace: dict[str, Any]) -> Any:
    """``name`` from its home under ``package``, kept in ``namespace`` so later lookups are direct."""
    home = homes.get(name)
    if home is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{package}.{home}"), name)
    namespace[name] = value
    return value
