"""Fit a bot's ``BotConfig`` to what the agent on its machine says it accepts.

A bot image is built from one version of meetbot and the control plane may be newer: a field
added to ``BotConfig`` (or a new enum value, a wider limit) would make the image's agent refuse
its config (the contract is ``extra="forbid"``) and exit before it ever links, and the bot
would end ``agent_lost``/``launch_failed`` minutes later with no word of why. So the agent
posts the JSON Schema of the ``BotConfig`` it accepts at the bootstrap
(:class:`agent.contracts.bootstrap.BootstrapRequest`), and :func:`fit_config`:

- leaves out every field the agent does not know **whose value is its default** (the older
  agent behaves exactly as the option asks: it was never set);
- refuses when a field the agent does not know carries a value, or when what remains does not
  validate against the agent's schema (an enum value or a range it predates), naming each
  place, so the bootstrap can fail the bot with a reason an operator can act on (rebuild the
  image from this version).

Errors: :class:`IncompatibleAgent` with one line per problem (``settings.foo: …``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema
import referencing.exceptions
from pydantic import BaseModel

from agent.contracts.bot_config import BotConfig

# Bounds on what an agent may post: pydantic's schema of BotConfig is about 7 KB.
MAX_SCHEMA_DEPTH = 32


class IncompatibleAgent(Exception):
    """The agent cannot take this config; ``problems`` name each place (``a.b: why``)."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def _resolve(node: Mapping[str, Any], defs: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The object schema ``node`` names (a ``$ref``, or the one object of an ``anyOf``)."""
    for _ in range(MAX_SCHEMA_DEPTH):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target = defs.get(ref.removeprefix("#/$defs/"))
            if not isinstance(target, Mapping):
                return None
            node = target
            continue
        if isinstance(node.get("properties"), Mapping):
            return node
        options = [
            option
            for option in node.get("anyOf", ())
            if isinstance(option, Mapping) and option.get("type") != "null"
        ]
        if len(options) != 1:
            return None
        node = options[0]
    return None


def _fit(
    model: BaseModel,
    schema: Mapping[str, Any],
    defs: Mapping[str, Any],
    path: str,
    problems: list[str],
) -> dict[str, Any]:
    known = schema.get("properties", {})
    dumped = model.model_dump(mode="json")
    fitted: dict[str, Any] = {}
    for name, field in type(model).model_fields.items():
        value = getattr(model, name)
        if name not in known:
            if value != field.get_default(call_default_factory=True):
                # Handed-over agent settings may be secret: their names only.
                shown = sorted(value) if name == "agent_settings" else dumped[name]
                problems.append(
                    f"{path}{name}: this agent does not know the option (set to "
                    f"{shown!r}); build the bot image from this control plane's version"
                )
            continue
        nested = _resolve(known[name], defs) if isinstance(value, BaseModel) else None
        if isinstance(value, BaseModel) and nested is not None:
            fitted[name] = _fit(value, nested, defs, f"{path}{name}.", problems)
        else:
            fitted[name] = dumped[name]
    return fitted


def _message(error: jsonschema.ValidationError) -> str:
    """The error's message, without the value where it is a handed-over agent setting."""
    if list(error.path)[:1] == ["agent_settings"]:
        return f"the agent refuses this setting ({error.validator})"
    return str(error.message)


def fit_config(config: BotConfig, accepts: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``config`` as the JSON object the agent whose schema is ``accepts`` will take.

    Args:
        config: The bot's full config, as this control plane builds it.
        accepts: The JSON Schema (draft 2020-12, pydantic's ``model_json_schema``) of the
            ``BotConfig`` the agent validates against.

    Raises:
        IncompatibleAgent: A field the agent does not know has a value, the remainder breaks
            the agent's schema, or ``accepts`` is not a usable JSON Schema.
    """
    defs = accepts.get("$defs", {})
    if not isinstance(defs, Mapping) or not isinstance(accepts.get("properties"), Mapping):
        raise IncompatibleAgent(["config_schema: not the JSON Schema of an object"])
    problems: list[str] = []
    fitted = _fit(config, accepts, defs, "", problems)
    if problems:
        raise IncompatibleAgent(problems)
    try:
        jsonschema.Draft202012Validator.check_schema(accepts)
        validator = jsonschema.Draft202012Validator(accepts)
        errors = sorted(validator.iter_errors(fitted), key=lambda error: list(error.path))
    except jsonschema.SchemaError as exc:
        raise IncompatibleAgent([f"config_schema: not a JSON Schema ({exc.message})"]) from exc
    except referencing.exceptions.Unresolvable as exc:
        raise IncompatibleAgent([f"config_schema: unresolvable reference ({exc})"]) from exc
    if errors:
        raise IncompatibleAgent(
            [
                f"{'.'.join(str(part) for part in error.path) or '(config)'}: {_message(error)}"
                " (this agent predates the value; build the bot image from this version)"
                for error in errors
            ]
        )
    return fitted
