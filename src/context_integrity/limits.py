"""Every numeric bound the library keeps, in one place.

Each bound exists so that a tool result, however large or strange, cannot
make a finding, a span or a run's memory grow without limit.
"""

from __future__ import annotations

from typing import Final

# A value quoted inside a finding's message: enough to recognise the shape,
# never enough to carry a tool's payload into the record.
MAX_QUOTED_CHARS: Final = 80

# Problems named one by one in an enforce refusal before "and N more".
MAX_NAMED_IN_REFUSAL: Final = 5

# Shortest string argument the grounding checks judge; shorter values
# ("id", "a1") match everything and prove nothing.
MIN_CHECKED_ARGUMENT_CHARS: Final = 4

# How deep the enum collector walks a tool's input schema.
MAX_SCHEMA_DEPTH: Final = 8

# A witness value or message written to a telemetry attribute.
MAX_ATTRIBUTE_CHARS: Final = 2048

# Findings a run keeps in memory (``Run.findings``); past this they are still
# emitted on their spans, counted and deduped, just not retained.
MAX_FINDINGS_PER_RUN: Final = 1000

# Distinct finding identities a run remembers for dedupe (each clipped to
# MAX_IDENTITY_CHARS). Past this a re-detected defect is emitted again: a
# duplicate event is better than unbounded memory or a lost first sighting.
MAX_IDENTITIES_PER_RUN: Final = 20_000
MAX_IDENTITY_CHARS: Final = 512

# Served texts a run keeps for the empty-lookup producer corpus and the
# dangling-reference bookkeeping (oldest dropped first).
MAX_SERVED_RESULTS_PER_RUN: Final = 2000
MAX_SERVED_TEXT_CHARS: Final = 65_536
# And the characters they hold together (a run's empty-lookup corpus); oldest dropped first.
MAX_PRODUCED_CHARS_PER_RUN: Final = 8_000_000

# How deep the argument walk descends into a tool call's arguments. Models
# write shallow JSON; anything deeper is either hostile or a cycle, and a
# walk that stops early is better than one that never returns.
MAX_ARGUMENT_DEPTH: Final = 32

# Entries read from an application's external-grounds provider per look.
# The provider is app code; a runaway generator must not stall the agent.
MAX_EXTERNAL_GROUNDS: Final = 10_000

# Longest string the column check hands to ``fromisoformat`` when judging a
# ``date`` column. The longest ISO 8601 form Python accepts is well under
# this; past it a string cannot be an ISO date, and a 5 MB cell must not be
# parsed to find that out.
MAX_ISO_DATE_CHARS: Final = 64

# Other kinds of offender a column finding names besides its first one
# ("... or None, bytes"), so a column of mixed junk cannot write a long list.
MAX_OTHER_OFFENDER_KINDS: Final = 3

# Call ids a run keeps per tool name between a model response announcing a
# call and the tool span that carries its id. Calls an application never
# executes would otherwise pile up for the whole run; the newest are kept.
MAX_PENDING_CALL_IDS: Final = 256

# Offered tool schemas a run remembers the enum words of (by identity); past it the memory starts over.
MAX_ENUM_SCHEMAS_PER_RUN: Final = 256

# Groups a run keeps suspended at once (``run.suspend``); past it the oldest suspension is dropped.
MAX_SUSPENDED_GROUPS: Final = 256

# Successful once-per-run executions a run remembers for duplicate-execution, and calls it keeps
# between a model asking for one and its result arriving; the oldest are dropped first.
MAX_ONCE_EXECUTIONS: Final = 4096

# Settled fact rows a run keeps for unsupported-claim (oldest dropped first).
MAX_FACT_ROWS_PER_RUN: Final = 20_000

# Distinct served forms the prior-turn evidence index holds; past it the index is truncated and the
# check notes not-applicable rather than trust stamps it could not keep.
MAX_EVIDENCE_FORMS: Final = 200_000
# Longest whole string the index keeps as one form (its tokens are always kept): answer values are
# tokens, so a longer string could never match one and would only hold memory.
MAX_EVIDENCE_FORM_CHARS: Final = 256

# Host agent runs an integration keeps open at once (a run the host never ends, such as one
# parked at an interrupt, is closed when this many newer ones are open), and the host's
# node runs it remembers while matching a run to the host's root run.
MAX_OPEN_HOST_RUNS: Final = 1024

# ``find_context_errors``: findings listed per answer by default, and at most (a model asking for
# more gets this many and is told so), and the characters of each finding's message it quotes.
FIND_DEFAULT_LIMIT: Final = 10
FIND_MAX_LIMIT: Final = 25
FIND_MESSAGE_CHARS: Final = 300
# Runs whose ledger an answer prints (the most recent); the others are counted.
FIND_MAX_LEDGERS: Final = 3

# An exception's stack trace on a span: the innermost frames name the bug; a recursion's
# thousand frames, or an exception message of megabytes, must not reach the exporter.
MAX_STACKTRACE_FRAMES: Final = 32
MAX_STACKTRACE_CHARS: Final = 8192

# How long process exit (and ci.shutdown()) waits for the exporters to take what is buffered. A
# collector that is down must not hold the process for the SDK's tens of seconds of retries.
EXIT_FLUSH_MILLIS: Final = 3000

# Problems a recording read keeps word for word (a report lists them); past
# this they are only counted, so a file of garbage cannot fill memory.
MAX_LISTED_PROBLEMS: Final = 1000

# Traces the streaming reader keeps open while they wait for a run span or a
# summary. Past this the oldest is reported with what it has: memory follows
# the runs in flight, never the size of the recording.
MAX_OPEN_TRACES_READ: Final = 4096

# Distinct bad declarations warned about before repeats go to debug, each kind apart: (server, tool,
# field) from MCP servers, and those framework tools carry, read at run time: a misconfigured fleet
# must not flood the log.
MAX_WARNED_DECLARATIONS: Final = 500

# Distinct (tool, undeclared ground) pairs warned about at run start, once each per process: past it
# nothing more is said or remembered.
MAX_WARNED_GROUNDS: Final = 256

# Distinct (call site, problem) pairs of ``ci.semantic`` facts nothing can read, and LangChain agents
# found running without our middleware, warned about once each per process: past it, silence.
MAX_WARNED_SEMANTIC_SHAPES: Final = 64
MAX_WARNED_UNARMED_AGENTS: Final = 64

# The local recording rotates when a write would take it past this size: the file is renamed to
# ``<name>.1`` (replacing the previous one) and a new one begins, so a recording holds at most about
# twice this on disk. $CONTEXT_INTEGRITY_RECORDING_MAX_BYTES overrides it, down to the minimum.
MAX_RECORDING_BYTES: Final = 64 * 1024 * 1024
MIN_RECORDING_BYTES: Final = 64 * 1024
RECORDING_BACKUPS: Final = 1

# Spans the recording's writer holds while the file takes the previous batch, and how many it writes
# a line. When the queue is full, the span that ends waits for room at most this long once per
# stall, then is dropped and counted (the host never waits on a disk that does not answer).
MAX_RECORDING_QUEUE_SPANS: Final = 2048
RECORDING_BATCH_SPANS: Final = 512
RECORDING_DELAY_MILLIS: Final = 1000
MAX_RECORDING_WAIT_MILLIS: Final = 250
# How long a writer waits for another process's lock on the recording before it writes its line
# anyway (one whole write: appends never interleave; only the rotation check is skipped).
RECORDING_LOCK_WAIT_MILLIS: Final = 500
# Traces a drop record names (the count is always whole).
MAX_DROPPED_TRACES_NAMED: Final = 20
