"""Renderings of a recording read back by :mod:`context_integrity.recording`."""

from __future__ import annotations

from .text import format_report

__all__ = ["format_report"]
