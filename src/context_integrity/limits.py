"""Every numeric bound the library keeps, in one place.

Each bound exists so that a tool result, however large or strange, cannot
make a finding, a span or a run's memory grow without limit.
"""

from __future__ import annotations

from typing import Final

# A value quoted inside a finding's message: enough to recognise the shape,
# never enough to carry a tool's payload into the record.
MAX_QUOTED_CHARS: Final = 80

# A run's profile (``setup(profile=True)``, what ``suggest`` reads): the tools, the columns and
# arguments per tool, and the producers per argument it names; past them it counts what it left out.
# And the characters of its form on the summary span (tools past it are left out whole, and counted).
MAX_PROFILED_TOOLS: Final = 64
MAX_PROFILED_COLUMNS: Final = 64
MAX_PROFILED_ARGUMENTS: Final = 32
MAX_PROFILE_PRODUCERS: Final = 8
MAX_PROFILE_CHARS: Final = 16_384
# ``suggest --retro``: the runs shown whole (those with findings); the rest are counted.
MAX_RETRO_RUNS_SHOWN: Final = 20

# Problems named one by one in an enforce refusal before "and N more".
MAX_NAMED_IN_REFUSAL: Final = 5

# Shortest string argument the grounding checks judge; shorter values
# ("id", "a1") match everything and prove nothing.
MIN_CHECKED_ARGUMENT_CHARS: Final = 4

# How deep the enum collector walks a tool's input schema.
MAX_SCHEMA_DEPTH: Final = 8

# A witness value or message written to a telemetry attribute.
MAX_ATTRIBUTE_CHARS: Final = 2048
# Opt-in content (``setup(capture_content=True)``): a request's history, a tool's arguments or result,
# as JSON. It is captured so a run can be read back and judged again, which a request of more than a
# few messages would not survive at the size of a finding's attribute; past this it is cut, and a
# later judge reads it as cut (its checks unreachable), never as whole.
MAX_CONTENT_CHARS: Final = 65_536
# Final answers a run span lists with content capture (one per conversation turn), the newest kept: a
# run of endless turns must not grow its span's attribute, or our memory of it, without end.
MAX_RECORDED_ANSWERS: Final = 16

# The most of one value the application's redaction hook is handed (a string's first characters, a
# structure's JSON that far). Only the first MAX_ATTRIBUTE_CHARS of what it returns ever leave, so a
# secret there was whole in what it saw; a hook is not handed a tool's megabytes once per value.
# Opt-in content, which leaves up to MAX_CONTENT_CHARS, hands the hook this much beyond that.
MAX_REDACTED_CHARS: Final = 65_536

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

# How long process exit (and ci.shutdown()) waits for the exporters to take what is buffered, and
# how long a processor we add to the application's own provider may hold its flush or its shutdown. A
# collector (or a Phoenix) that is down must not hold the process for the SDK's tens of seconds.
EXIT_FLUSH_MILLIS: Final = 3000

# The largest contracts file read: one is written by hand or by ``suggest``, and a path that names
# something this large names something else (a recording, a dump) that must not be read whole.
MAX_CONTRACTS_FILE_BYTES: Final = 4 * 1024 * 1024

# Annotation requests to Phoenix that may fail in a row before ``judge --phoenix`` stops sending
# (and counts what it did not send): a Phoenix that is down must not cost a timeout per batch.
MAX_FAILED_ANNOTATION_POSTS: Final = 3

# Problems a recording read keeps word for word (a report lists them); past
# this they are only counted, so a file of garbage cannot fill memory.
MAX_LISTED_PROBLEMS: Final = 1000

# How deep an attribute value (arrays and key-value lists inside each other) is read: the recorder
# writes flat values; a deeper one is hostile, and is a problem rather than a recursion.
MAX_ATTRIBUTE_VALUE_DEPTH: Final = 32

# Runs the HTML report shows in full (the first ones read); the rest are counted in its summary and
# charts. 10,000 runs made a 73 MB page that took a browser minutes to open. And the findings one
# run shows in full, and the distinct kinds and tools its charts name (the rest are one "other" bar).
MAX_HTML_RUNS: Final = 200
MAX_HTML_FINDINGS_PER_RUN: Final = 100
MAX_HTML_CHART_BARS: Final = 30

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

# The longest recording line a reader reads: the size a recording rotates at (a writer's line is one
# batch of spans, far shorter). A longer line is read past in chunks, never held, and counted.
MAX_RECORDING_LINE_BYTES: Final = MAX_RECORDING_BYTES

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

# ── Judging the traces other instrumentations recorded (``traces/``) ──
# Traces the trace reader holds while their spans arrive (a trace's runs are judged once its root span
# has arrived, the source says it is whole, or the source ends). Past this the oldest is judged with
# what it has, and said: memory follows the traces in flight, never the size of the source.
MAX_OPEN_TRACES_JUDGED: Final = 1024
# Characters of attribute text the held traces keep together (content capture makes a model call's
# span carry its whole history). Past it the oldest other traces are judged early; a single trace past
# it alone keeps what it has and its later spans are counted, not read (the run's checks then read
# unreachable). The decoded content takes a few bytes a character: a 100 MB trace is read in about
# 250 MB, however large the source or one of its traces.
MAX_HELD_TRACE_CHARS: Final = 64 * 1024 * 1024
# Spans one held trace keeps (their parent links and readings); past it, as above.
MAX_SPANS_PER_TRACE: Final = 100_000
# A tool's input LangChain's tracers write as ``str()`` of its arguments (a Python literal, not JSON):
# read as a literal up to this many characters; the parser's memory grows with the text, arguments
# are short, and a longer one is said as unreadable.
MAX_PYTHON_LITERAL_CHARS: Final = 64 * 1024
# A trace source read as one JSON document rather than line by line (a Tempo or Jaeger trace file, a
# backend's API response, one Phoenix page): larger is refused with a sentence, never half-parsed.
MAX_TRACE_DOCUMENT_BYTES: Final = 256 * 1024 * 1024
# Tempo and Jaeger searches: traces listed and fetched per search (the source says when it hit this).
MAX_SEARCHED_TRACES: Final = 1000
# Spans asked of Phoenix's span API per page (its own ceiling is 1000).
PHOENIX_PAGE_SPANS: Final = 1000
# How long one request to a trace backend (Tempo, Jaeger, Phoenix) may take before the source fails.
TRACE_API_TIMEOUT_SECONDS: Final = 30.0
# A run's model calls repeat the tools offered, the system instructions and the history before them:
# the trace readers remember what they decoded of the last few (texts of at most the given size, the
# conversations of this many traces), so each call costs what it added and the judge meets the same
# objects again, as it does in process.
MAX_REMEMBERED_DECODINGS: Final = 16
MAX_REMEMBERED_TEXT_CHARS: Final = 65_536

# ── The pipeline stage (``context-integrity serve``) ──
# One OTLP request's body, as received and after gzip is undone: the OTLP specification's
# recommended default. Larger is refused (HTTP 413, gRPC RESOURCE_EXHAUSTED) and never read whole.
SERVE_MAX_REQUEST_BYTES: Final = 20 * 1024 * 1024
# How long a trace whose agent run span has ended waits for more of its spans before it is judged,
# measured from the last span of it that arrived: spans of one trace leave their processes in
# batches (the SDK's default schedule is 5 s), so the run span can arrive before a child's batch.
SERVE_QUIET_SECONDS: Final = 2.0
# The longest a trace is held from its first span, run span or not: an agent that never ends its
# run span, or whose run span is lost, is judged with what arrived and forwarded, never kept.
SERVE_MAX_WAIT_SECONDS: Final = 60.0
# Traces held at once, and the serialized bytes of their held spans together. Past either, the
# arriving span of a new trace is forwarded unjudged and counted: the sender is never made to wait
# for room.
SERVE_MAX_HELD_TRACES: Final = 10_000
SERVE_MAX_HELD_BYTES: Final = 96 * 1024 * 1024
# What the hold costs in memory for each serialized byte it counts: a held span keeps its bytes, where
# it sits, and what its dialect read of it (decoded messages and rows), measured at 2.6x (pydantic-ai's
# spans) to 4.8x (the GenAI conventions' shapes with their histories). So the hold stays under
# SERVE_MAX_HELD_BYTES times this, about 600 MiB, however many traces are open.
SERVE_HELD_MEMORY_PER_BYTE: Final = 6
# Spans one held trace keeps; later ones of that trace are forwarded unjudged and counted.
SERVE_MAX_SPANS_PER_TRACE: Final = 10_000
# The longest a receiving thread waits for the hold's lock before it forwards its spans unjudged:
# the bound on how long a sender ever waits on judging (the hold's lock is only taken for
# bookkeeping, never while a trace is judged or forwarded).
SERVE_MAX_SENDER_WAIT_SECONDS: Final = 0.25
# Traces judged and forgotten, remembered (by id) so that a span arriving after its trace was
# judged is forwarded unchanged and counted late rather than opening a second, partial trace.
SERVE_REMEMBERED_TRACES: Final = 100_000
# The retry queue in front of the forward target: serialized requests waiting to be sent, or sent
# and failed and waiting to be sent again. Past this cap, what arrives is dropped and counted.
SERVE_RETRY_QUEUE_BYTES: Final = 64 * 1024 * 1024
# One request to the forward target carries at most this much (queued requests are merged up to it).
SERVE_FORWARD_BATCH_BYTES: Final = 4 * 1024 * 1024
# One send to the forward target may take this long before it counts as failed and is retried.
SERVE_FORWARD_TIMEOUT_SECONDS: Final = 10.0
# Retries back off exponentially from the first delay to the last, with jitter.
SERVE_RETRY_FIRST_SECONDS: Final = 0.1
SERVE_RETRY_MAX_SECONDS: Final = 5.0
# SIGTERM: stop receiving, judge every trace whose run span has ended, forward the rest unjudged,
# and drain the retry queue, within this long in all; what the target has not taken by then is
# dropped and counted. Under Kubernetes' default 30 s grace period, with room to spare. Judging takes
# at most the first part of it; traces not judged by then are forwarded unjudged and counted.
SERVE_SHUTDOWN_SECONDS: Final = 20.0
SERVE_SHUTDOWN_JUDGE_SECONDS: Final = 10.0
# Concurrent OTLP/HTTP requests being read or answered; one more is answered 503 (retryable) at once.
SERVE_MAX_HTTP_REQUESTS: Final = 64
# Threads answering gRPC calls.
SERVE_GRPC_WORKERS: Final = 16
# Label sets of the findings counter on /metrics (kind, seam, tool, advisory, service): past it a
# new tool or service is counted under "other", so a stream of invented tool names cannot grow it.
SERVE_MAX_FINDINGS_SERIES: Final = 2000
# Unreachable encounters a summary span written in the pipeline names as events (the ledger counts
# them all); a run whose trace carries no content has one per step, and a page of them says no more.
SERVE_MAX_UNREACHABLE_EVENTS: Final = 32
# Lines the assembler and the judge say about one trace that reach the log; the rest are counted.
SERVE_MAX_NOTES_PER_TRACE: Final = 5

# What a contract read from an MCP server may declare: a server is data this process does not
# control, and a hostile one lists what makes every judged call expensive (100,000 columns, each a
# finding) or every log line a megabyte. More columns or grounds than any real tool declares, or a
# name longer than any real one, refuses the whole contract, with one warning.
MAX_SERVED_COLUMNS: Final = 1024
MAX_SERVED_GROUNDS: Final = 256
MAX_SERVED_NAME_CHARS: Final = 256

# Findings of one kind one judged result files: the columns past the first ones are named (up to
# MAX_NAMED_IN_REFUSAL) and counted in one last finding, so a wide declaration cannot turn one
# result into a flood of events and counter increments.
MAX_COLUMN_FINDINGS_PER_KIND: Final = 16

# Contracts read from MCP servers the process keeps, (server, tool) pairs over all servers: a
# server that lists new names on every listing must not grow the book without end. Past it, further
# ones are not kept (told once), so their tools are judged by nothing they declared.
MAX_SERVED_CONTRACTS: Final = 10_000
