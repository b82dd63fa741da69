"""The operator's dials, each declared once.

A dial is one field of :class:`Dials`, with its vocabulary, its error message
and its meaning in the field's metadata. ``setup()``'s keyword parameters, its
validation and its refusal messages are all derived from these fields, so a
new dial is one field here and nothing else.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Final, Literal, get_args

from ..text import nearest

ColumnDial = Literal["off", "warn", "enforce"]
COLUMN_DIALS: Final[tuple[ColumnDial, ...]] = get_args(ColumnDial)
ENFORCE: Final = "enforce"
Posture = Literal["observe", "dev"]
POSTURES: Final[tuple[Posture, ...]] = get_args(Posture)

ExternalGroundsProvider = Callable[[], object]


class SetupError(ValueError):
    """A setup option has a value the library cannot honour. Raised only by ``setup()`` (and by
    ``ci.run()`` for a run option that is not text), never while an agent runs."""


@dataclass(frozen=True, slots=True)
class DialSpec:
    """How one dial is validated and explained."""

    accepts: Callable[[object], bool]
    expected: str
    meaning: str
    annotation: str
    public: bool = True

    def refusal(self, name: str, value: object) -> SetupError:
        try:
            shown = repr(value)
        except Exception:
            shown = f"<{type(value).__name__}>"
        return SetupError(f"{name} must be {self.expected} (got {shown[:200]}). {self.meaning}")


def _one_of(words: tuple[str, ...]) -> Callable[[object], bool]:
    return lambda value: isinstance(value, str) and value in words


def _is_bool(value: object) -> bool:
    return isinstance(value, bool)


def _bool_or_none(value: object) -> bool:
    return value is None or isinstance(value, bool)


def _callable_or_none(value: object) -> bool:
    return value is None or callable(value)


@dataclass(frozen=True, slots=True)
class Dials:
    """The operator's switches. Every one defaults to the byte-identical choice."""

    check_column_types: ColumnDial = field(
        default="off",
        metadata={
            "dial": DialSpec(
                accepts=_one_of(COLUMN_DIALS),
                expected="'off', 'warn' or 'enforce'",
                meaning=(
                    "'off' judges nothing; 'warn' files findings and hands the rows over unchanged; "
                    "'enforce' also replaces a mistyped result with a refusal sentence."
                ),
                annotation="Literal['off', 'warn', 'enforce']",
            )
        },
    )
    notice_empty_lookups: bool = field(
        default=False,
        metadata={
            "dial": DialSpec(
                accepts=_is_bool,
                expected="a boolean",
                meaning="Pass True to notice empty results for ids a declared producer served.",
                annotation="bool",
            )
        },
    )
    notice_prior_turn_evidence: bool = field(
        default=False,
        metadata={
            "dial": DialSpec(
                accepts=_is_bool,
                expected="a boolean",
                meaning=(
                    "Pass True to notice a final answer whose every data value was last served in an earlier "
                    "conversation turn (advisory)."
                ),
                annotation="bool",
            )
        },
    )
    external_grounds: ExternalGroundsProvider | None = field(
        default=None,
        metadata={
            "dial": DialSpec(
                accepts=_callable_or_none,
                expected="a function returning (value, source) entries, or None",
                meaning=(
                    "It is called (at most once per model response) when a chosen argument has no ground "
                    "in the run, and returns the values the application verified itself."
                ),
                annotation="Callable[[], Iterable[ExternalGround | tuple[str, str] | Mapping[str, str]]] | None",
            )
        },
    )
    profile: bool | None = field(
        default=None,
        metadata={
            "dial": DialSpec(
                accepts=_bool_or_none,
                expected="a boolean, or None (on in dev posture, off otherwise)",
                meaning=(
                    "Pass True to write each run's profile (per tool, the kinds of value its columns held "
                    "and which earlier tool served each argument: names and counts, never a value) on its "
                    "summary span, for `context-integrity suggest` to propose declarations from."
                ),
                annotation="bool | None",
            )
        },
    )
    posture: Posture = field(
        default="observe",
        metadata={
            "dial": DialSpec(
                accepts=_one_of(POSTURES),
                expected="'observe' or 'dev'",
                meaning="'observe' mints nothing; 'dev' runs every check's canary and fails a run whose check is dead.",
                annotation="Literal['observe', 'dev']",
            )
        },
    )

    @classmethod
    def validated(cls, **options: object) -> Dials:
        """Build dials from keyword options, refusing an unknown name or a value outside its vocabulary."""
        specs = dial_specs(include_private=True)
        for name in options:
            if name not in specs:
                raise unknown_option(name, tuple(specs))
        for name, value in options.items():
            if not specs[name].accepts(value):
                raise specs[name].refusal(name, value)
        return cls(**options)  # type: ignore[arg-type]

    def reported_posture(self) -> str:
        """The posture a run's summary states: ``'dev'`` in dev posture; else ``'enforce'``
        whenever a dial may replace what the agent receives; else ``'observe'``.

        A summary saying ``observe`` while results were being refused would tell an operator the
        library never acts on the agent; the dials themselves are reported beside it.
        """
        if self.posture == "observe" and self.check_column_types == ENFORCE:
            return ENFORCE
        return self.posture

    @property
    def profiling(self) -> bool:
        """Whether runs gather a profile: as asked, else in dev posture."""
        return self.profile if self.profile is not None else self.posture == "dev"

    def in_force(self) -> dict[str, str]:
        """Each public dial's value as a short string, for the summary span."""
        out: dict[str, str] = {}
        for name, spec in dial_specs().items():
            value = self.profiling if name == "profile" else getattr(self, name)
            if spec.annotation == "bool" or isinstance(value, (bool, str)):
                out[name] = str(value).lower() if isinstance(value, bool) else str(value)
            else:
                out[name] = "off" if value is None else "on"
        return out


def dial_specs(*, include_private: bool = False) -> Mapping[str, DialSpec]:
    """Every dial by name, in declaration order."""
    out: dict[str, DialSpec] = {}
    for spec_field in fields(Dials):
        spec = spec_field.metadata["dial"]
        if include_private or spec.public:
            out[spec_field.name] = spec
    return out


def dial_defaults() -> dict[str, object]:
    return {f.name: f.default for f in fields(Dials) if f.metadata["dial"].public}


def dial_parameters() -> list[inspect.Parameter]:
    """The dials as keyword-only parameters, for the signature of ``setup()``."""
    defaults = dial_defaults()
    return [
        inspect.Parameter(
            name, inspect.Parameter.KEYWORD_ONLY, default=defaults[name], annotation=spec.annotation
        )
        for name, spec in dial_specs().items()
    ]


def dials_doc() -> str:
    """One line per dial, for the docstring of ``setup()``."""
    return "\n".join(
        f"    - ``{name}``: {spec.expected}. {spec.meaning}" for name, spec in dial_specs().items()
    )


def unknown_option(name: str, known: tuple[str, ...]) -> SetupError:
    close = nearest(name, known)
    hint = f" Did you mean {close!r}?" if close else ""
    return SetupError(f"setup() got an unknown option {name!r}.{hint} The options are: {', '.join(known)}.")
