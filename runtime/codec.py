"""The one codec that writes and reads every process configuration (hosts and switch
agents), and the range checks their types share.

The runner compiles a spec into a run plan (``emulator.plan``) holding one typed
configuration per host (``hosts.config``) and one per switch (``switch_agent.config``),
all in emulated units (``runtime.scale`` converted them once). The launcher writes each as
JSON with :func:`to_dict`; the process reads it back with :func:`from_dict` into the same
class. Neither side reads a dict by string key. Each range check lives once, in the
type's ``__post_init__`` (raising :class:`ConfigError`, which names the field), and the
spec layer reuses them (docs/architecture.md §9).
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing


class ConfigError(ValueError):
    """A configuration value out of range: ``field`` (the attribute), ``value``, and
    ``allowed`` (what is allowed, in words)."""

    def __init__(self, field: str, value, allowed: str):
        super().__init__(f"{field} {allowed}, got {value!r}")
        self.field, self.value, self.allowed = field, value, allowed


def check(ok: bool, field: str, value, allowed: str) -> None:
    if not ok:
        raise ConfigError(field, value, allowed)


def finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


# --- the codec --------------------------------------------------------------------------

def to_dict(obj):
    """A (nested) config dataclass as JSON-ready data (tuples become lists)."""
    if dataclasses.is_dataclass(obj):
        own = getattr(type(obj), "to_dict", None)
        if own is not None and own is not Codec.to_dict:
            return obj.to_dict()                 # a type with its own shape (CcConfig)
        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_dict(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): to_dict(v) for k, v in obj.items()}
    return obj


def from_dict(cls, data, where: str | None = None):
    """The inverse of :func:`to_dict` for ``cls``, driven by its type hints. An unknown
    key is an error: a config written by another version must not be half-read."""
    own = getattr(cls, "from_dict", None)
    if own is not None and getattr(own, "__func__", None) is not Codec.from_dict.__func__:
        return own(data)                         # a type with its own shape (CcConfig)
    return _fields(cls, data, where or cls.__name__)


def _fields(cls, data, where: str):
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected an object, got {data!r}")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = set(data) - set(names)
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)}; allowed: {', '.join(names)}")
    return cls(**{k: _decode(hints[k], v, f"{where}.{k}") for k, v in data.items()})


def _decode(tp, data, where: str):
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if data is None:
            return None
        return _decode(next(a for a in args if a is not type(None)), data, where)
    if dataclasses.is_dataclass(tp):
        return from_dict(tp, data, where)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return tuple(_decode(args[0], x, where) for x in data)
    if origin is list:
        return [_decode(args[0], x, where) for x in data]
    if tp is tuple or origin is tuple:
        return _freeze(data)
    if origin is dict:
        kt, vt = args
        return {_decode(kt, k, where): _decode(vt, v, f"{where}[{k}]") for k, v in data.items()}
    if tp is float and isinstance(data, int) and not isinstance(data, bool):
        return float(data)
    if tp is int and isinstance(data, str):
        return int(data)                     # dict keys come back from JSON as strings
    return data


def _freeze(x):
    return tuple(_freeze(y) for y in x) if isinstance(x, (list, tuple)) else x


class Codec:
    """Mixin: ``cfg.to_dict()`` and ``Cls.from_dict(d)`` through the one codec."""

    def to_dict(self) -> dict:
        return {f.name: to_dict(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, data: dict):
        return _fields(cls, data, cls.__name__)


# --- process groups ---------------------------------------------------------------------

def check_netns_pid(pid) -> None:
    """A process group member's namespace: a process id, or 0 for the process's own."""
    check(isinstance(pid, int) and pid >= 0, "netns_pid", pid,
          "must be a process id, or 0 for the process's own namespace")


def check_group(members, cpu, what: str) -> None:
    """A process group (hosts or switches): at least one member, a CPU number or None."""
    check(len(members) > 0, "members", len(members), f"at least one {what}")
    check(cpu is None or isinstance(cpu, int) and cpu >= 0, "cpu", cpu,
          "must be a CPU number, or null")
