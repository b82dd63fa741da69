"""The claims contract: which typed answer field claims which settled fact.

``ci.declare_claims(Answer, {"port.status": ("fc1/3", "status")})`` says: the answer's
``port.status`` (a dot-path into the pydantic output model) states the fact
``status`` of entity ``fc1/3``, which a tool settles with ``ci.semantic(...)`` (or with
rows its contract declares ``settles`` for).

Refused at definition, naming the model, the field and the fix: without a pydantic
output model (prose is never checked, so a contract with nothing typed to read would
silently check nothing), when empty, with a blank path, entity or field, or with a
path whose first step is not a field of the model.

A contracts file has no model class to name: its claims are read from any structured
answer (a JSON object, as a recorded trace holds it), or from the answers of one agent
(:func:`define_answer_claims`), by the same dot-paths and the same refusals bar the
model's field list.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from .columns import is_model_class
from .errors import DeclarationError, KeyPath, did_you_mean

if TYPE_CHECKING:
    from pydantic import BaseModel


@dataclass(frozen=True, slots=True)
class Claim:
    """One answer field (dot-path) and the (entity, field) fact it claims."""

    path: str
    entity: str
    field: str


@dataclass(frozen=True, slots=True)
class AnswerScope:
    """The answers a claims contract without a model applies to: one agent's, or (``None``) any."""

    agent: str | None = None


@dataclass(frozen=True, slots=True)
class ClaimsContract:
    """An output model (or, without one, the answers of ``scope``) and the claims its fields make."""

    output_model: type[BaseModel] | None
    claims: tuple[Claim, ...]
    scope: AnswerScope = AnswerScope()

    @property
    def key(self) -> type[BaseModel] | AnswerScope:
        """What the contract book files it under: one contract per model, per agent, and for any answer."""
        return self.output_model if self.output_model is not None else self.scope

    @property
    def name(self) -> str:
        if self.output_model is not None:
            return f"{self.output_model.__module__}.{self.output_model.__qualname__}"
        return f"the answers of agent {self.scope.agent!r}" if self.scope.agent else "every structured answer"


def _refuse(model: object, problem: str, fix: str, at: KeyPath = ()) -> DeclarationError:
    label = model if isinstance(model, str) else getattr(model, "__qualname__", None) or type(model).__name__
    error = DeclarationError(f"Claims of {label!r}: {problem} {fix}")
    error.at = at
    return error


# The two keys of a claim's table form, in the order a message lists them.
CLAIM_KEYS: Final = ("entity", "field")


def _pair(model: object, path: str, target: object) -> tuple[str, str]:
    if isinstance(target, Mapping):
        unknown = [str(key) for key in target if key not in CLAIM_KEYS]
        if unknown:
            raise _refuse(
                model,
                f"the claim of {path!r} has unknown field(s) {', '.join(map(repr, unknown))}."
                f"{did_you_mean(unknown[0], CLAIM_KEYS)}",
                'It takes only "entity" and "field", e.g. {"entity": "fc1/3", "field": "status"}.',
                (path, unknown[0]),
            )
        entity, field = target.get("entity"), target.get("field")
    elif isinstance(target, (tuple, list)) and len(target) == 2:
        entity, field = target
    else:
        raise _refuse(
            model,
            f"the claim of {path!r} is {type(target).__name__}, not an (entity, field) pair.",
            'Write it as ("fc1/3", "status") or {"entity": "fc1/3", "field": "status"}.',
            (path,),
        )
    for index, (label, value) in enumerate((("entity", entity), ("field", field))):
        if not isinstance(value, str) or not value.strip():
            raise _refuse(
                model,
                f"the claim of {path!r} has a blank or non-string {label} ({value!r}).",
                f"Name the {label} exactly as the tool's semantic() envelope (or its settles rows) writes it.",
                (path, label) if isinstance(target, Mapping) else (path, index),
            )
    assert isinstance(entity, str) and isinstance(field, str)
    return entity, field


def _check_path(model: type[BaseModel], path: str) -> None:
    first = path.split(".", 1)[0]
    fields: Mapping[str, Any] = model.model_fields
    if first not in fields:
        raise _refuse(
            model,
            f"{path!r} does not start with a field of the output model (its fields: {', '.join(fields) or 'none'}).",
            "Name a field of the model, with dots into nested models (e.g. 'port.status').",
            (path,),
        )


def _claims_of(label: object, claims: object, model: type[BaseModel] | None) -> tuple[Claim, ...]:
    if not isinstance(claims, Mapping):
        raise _refuse(
            label,
            f"the claims are {type(claims).__name__}, not a mapping of answer field to (entity, field).",
            'Pass e.g. {"port_status": ("fc1/3", "status")}.',
        )
    if not claims:
        raise _refuse(
            label,
            "the claims are empty, so the contract checks nothing.",
            "Map at least one answer field to the (entity, field) it claims, or drop the contract.",
        )
    out: list[Claim] = []
    for path, target in claims.items():
        if not isinstance(path, str) or not path.strip() or any(not part for part in path.split(".")):
            raise _refuse(
                label,
                f"the answer field {path!r} is blank or has an empty step.",
                "Name a field of the answer, with dots into nested fields (e.g. 'port.status').",
                (str(path),),
            )
        if model is not None:
            _check_path(model, path)
        entity, field = _pair(label, path, target)
        out.append(Claim(path, entity, field))
    return tuple(out)


def define_claims(output_model: object, claims: object) -> ClaimsContract:
    """Validate a claims contract. Raises :class:`DeclarationError` for anything it cannot honour."""
    if not is_model_class(output_model):
        raise _refuse(
            output_model,
            "a claim contract needs a validated answer to read, and this is not a pydantic model class.",
            "Pass the agent's pydantic output model: the claim seam compares TYPED fields; prose is never "
            "checked, so without a model this contract would check nothing.",
        )
    model: type[BaseModel] = output_model  # type: ignore[assignment]
    return ClaimsContract(output_model=model, claims=_claims_of(model, claims, model))


def define_answer_claims(claims: object, *, agent: str | None = None) -> ClaimsContract:
    """Validate claims read from a structured answer with no model class (a contracts file's).

    ``agent`` limits them to that agent's answers; ``None`` reads them from any structured answer.
    An answer that is not a JSON object makes every claim ``unreachable``, as in process.
    """
    if agent is not None and (not isinstance(agent, str) or not agent.strip()):
        raise _refuse(
            agent, f"the agent name {agent!r} is blank or not text.", "Name the agent as its runs name it."
        )
    scope = AnswerScope(agent)
    label = f"agent {agent}" if agent else "every structured answer"
    return ClaimsContract(output_model=None, claims=_claims_of(label, claims, None), scope=scope)
