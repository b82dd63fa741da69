"""Renderings of a recording read back by :mod:`context_integrity.recording`."""

from __future__ import annotations

from .find import call_tool, find_context_errors, tool_definition
from .html import format_html
from .text import format_report, write_report

__all__ = [
    "call_tool",
    "find_context_errors",
    "format_html",
    "format_report",
    "tool_definition",
    "write_report",
]
