"""How a spec's values are checked and a bad one is reported: :class:`SpecError`, one line
naming the file, the key, the value and what is allowed; a TOML table read into its
section dataclass of ``emulator.spec.schema`` (known keys, each of its field's type and in its
``Range``); and a process config's own range check reported as the spec's key
(:func:`reuse`). ``emulator.spec`` and ``emulator.spec.jobs`` check a spec with these.
"""

from __future__ import annotations

from runtime.codec import ConfigError
from runtime.scale import DEFAULT_DILATION

MAX_MESSAGE_CHARS = 2000


class SpecError(ValueError):
    """A bad spec: one line naming the file, the key, the value and what is allowed."""

    def __init__(self, message: str):
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(message))
        if len(text) > MAX_MESSAGE_CHARS:
            text = text[:MAX_MESSAGE_CHARS] + " ..."
        super().__init__(text)


def need(cond: bool, path: str, key: str, value, allowed: str) -> None:
    """Raise :class:`SpecError` for ``key = value`` of ``path`` unless ``cond``."""
    if not cond:
        raise SpecError(f"{path}: {key} = {show(value)}: {allowed}")


def show(value, limit: int = 120) -> str:
    """A value as the spec's reader wrote it (repr), cut short if long."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def section(cls, data, where: str, path: str, dilation: float = DEFAULT_DILATION):
    """A table as ``cls``: known keys, each of its field's type and in its ``Range``
    (times: once dilated by ``dilation``, too)."""
    if not isinstance(data, dict):
        raise SpecError(f"{path}: [{where}] must be a table, got {show(data)}")
    fields = cls.__dataclass_fields__
    for k in data:
        if k not in fields:
            raise SpecError(f"{path}: unknown key {where}.{k}; allowed: {', '.join(fields)}")
    out = {}
    for k, v in data.items():
        out[k] = v = _typed(v, fields[k].default, f"{where}.{k}", path)
        rng = fields[k].metadata.get("range")
        allowed = rng.allowed(v, dilation) if rng is not None and v is not None else None
        if allowed:
            raise SpecError(f"{path}: {where}.{k} = {show(v)}: {allowed}")
    return cls(**out)


def _typed(v, default, key, path):
    if isinstance(default, bool):
        if not isinstance(v, bool):
            raise SpecError(f"{path}: {key} = {show(v)}: must be true or false")
        return v
    if isinstance(default, int) and default is not None and not isinstance(default, bool):
        if isinstance(v, bool) or not isinstance(v, int):
            raise SpecError(f"{path}: {key} = {show(v)}: must be an integer")
        return v
    if isinstance(default, float):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise SpecError(f"{path}: {key} = {show(v)}: must be a number")
        return float(v)
    if isinstance(default, str):
        if not isinstance(v, str):
            raise SpecError(f"{path}: {key} = {show(v)}: must be a string")
        return v
    return v


def reuse(path: str, where: str, values, build, keys: dict | None = None, unit: str = ""):
    """Run a process-config type's own range check (``build``) on a spec section's values;
    its ``ConfigError`` names a field, reported here as the spec's key (``keys`` maps
    fields whose spec key differs, e.g. emulated ``t_win_s`` -> real-scale ``t_win_us``)
    with the spec's own value, and ``unit`` after the words of a renamed key)."""
    try:
        return build()
    except ConfigError as e:
        key = (keys or {}).get(e.field, e.field)
        value = getattr(values, key, e.value)
        note = unit if key != e.field else ""
        raise SpecError(f"{path}: {where}.{key} = {show(value)}: {e.allowed}{note}") \
            from None
