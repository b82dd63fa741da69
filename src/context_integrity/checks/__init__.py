"""One module per check. Every check is a pure function of plain data:
no OpenTelemetry, no I/O, no globals. The judge feeds them; they never
import the judge."""
