"""Plugin config and probe args as JSON, strict as the Rust SDK's (unknown
fields are refused; empty text or null keeps the defaults)."""

import json
from typing import Any, Dict


class ConfigError(ValueError):
    pass


def parse_as(what: str, text: str, defaults: Dict[str, Any]) -> Dict[str, Any]:
    """Parses ``text`` as a JSON object whose keys must be among ``defaults``;
    returns ``defaults`` updated with it. The error says ``invalid <what>: ...``."""
    trimmed = text.strip()
    out = dict(defaults)
    if trimmed in ("", "null"):
        return out
    try:
        value = json.loads(trimmed)
    except ValueError as e:
        raise ConfigError(f"invalid {what}: {e}") from None
    if not isinstance(value, dict):
        raise ConfigError(f"invalid {what}: expected an object")
    for key, v in value.items():
        if key not in defaults:
            known = ", ".join(f"`{k}`" for k in defaults)
            raise ConfigError(f"invalid {what}: unknown field `{key}`, expected one of {known}")
        out[key] = v
    return out


def parse_config(text: str, defaults: Dict[str, Any]) -> Dict[str, Any]:
    return parse_as("plugin config", text, defaults)
