"""The claims contract: which typed answer field claims which settled fact.

``ci.declare_claims(Answer, {"port.status": ("fc1/3", "status")})`` says: the answer's
``port.status`` (a dot-path into the pydantic output model) states the fact
``status`` of entity ``fc1/3``, which a tool settles with ``ci.semantic(...)``.

Refused at definition, naming the model, the field and the fix: without a pydantic
output model (prose is never checked, so a contract with nothing typed to read would
silently check nothing), when empty, with a blank path, entity or field, or with a
path whose first step is not a field of the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .columns import is_model_class
from .errors import DeclarationError

if TYPE_CHECKING:
    from pydantic import BaseModel


@dataclass(frozen=True, slots=True)
class Claim:
    """One answer field (dot-path) and the (entity, field) fact it claims."""

    path: str
    entity: str
    field: str


@dataclass(frozen=True, slots=True)
class ClaimsContract:
    """An output model and the claims its fields make."""

    output_model: type[BaseModel]
    claims: tuple[Claim, ...]

    @property
    def name(self) -> str:
        return f"{self.output_model.__module__}.{self.output_model.__qualname__}"


def _refuse(model: object, problem: str, fix: str) -> DeclarationError:
    label = getattr(model, "__qualname__", None) or type(model).__name__
    return DeclarationError(f"Claims of {label!r}: {problem} {fix}")


def _pair(model: object, path: str, target: object) -> tuple[str, str]:
    if isinstance(target, Mapping):
        entity, field = target.get("entity"), target.get("field")
    elif isinstance(target, (tuple, list)) and len(target) == 2:
        entity, field = target
    else:
        raise _refuse(
            model,
            f"the claim of {path!r} is {type(target).__name__}, not an (entity, field) pair.",
            'Write it as ("fc1/3", "status") or {"entity": "fc1/3", "field": "status"}.',
        )
    for label, value in (("entity", entity), ("field", field)):
        if not isinstance(value, str) or not value.strip():
            raise _refuse(
                model,
                f"the claim of {path!r} has a blank or non-string {label} ({value!r}).",
                f"Name the {label} exactly as the tool's semantic() envelope writes it.",
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
        )


def define_claims(output_model: object, claims: object) -> ClaimsContract:
    """Validate a claims contract. Raises :class:`DeclarationError` for anything it cannot honour."""
    if not is_model_class(output_model):
        raise _refuse(
            output_model,
            "a claim contract needs a validated answer to read, and this is not a pydantic model class.",
            "Pass the agent's pydantic output model: the claim seam compares TYPED fields; prose is never "
            "checked, so without a model this contract would check nothing.",
        )
    if not isinstance(claims, Mapping):
        raise _refuse(
            output_model,
            f"the claims are {type(claims).__name__}, not a mapping of answer field to (entity, field).",
            'Pass e.g. {"port_status": ("fc1/3", "status")}.',
        )
    if not claims:
        raise _refuse(
            output_model,
            "the claims are empty, so the contract checks nothing.",
            "Map at least one answer field to the (entity, field) it claims, or drop the contract.",
        )
    out: list[Claim] = []
    for path, target in claims.items():
        if not isinstance(path, str) or not path.strip() or any(not part for part in path.split(".")):
            raise _refuse(
                output_model,
                f"the answer field {path!r} is blank or has an empty step.",
                "Name a field of the output model, with dots into nested fields (e.g. 'port.status').",
            )
        _check_path(output_model, path)  # type: ignore[arg-type]
        entity, field = _pair(output_model, path, target)
        out.append(Claim(path, entity, field))
    return ClaimsContract(output_model=output_model, claims=tuple(out))  # type: ignore[arg-type]
