"""A run in process: :class:`~.lifecycle.Run` (an ``invoke_agent`` span with its judge and ledger), the
model calls and tool calls it opens, which run is current, the dials it begins with, and the span
processor that writes its disposition summary when it ends.
"""
