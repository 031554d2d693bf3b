"""How a part of ``summary.json`` is written and read back: :class:`Part`, a dataclass
whose type hints say what each key holds.

``to_json`` writes a part's fields, in their order, under their JSON keys; ``from_json``
reads them back checked against the hints -- every key present (but those :func:`key`
says may be absent), none unknown, each value of its type -- and names the first that is
not, as a path from the file's top (``runs[0].fidelity.faithful: expected a bool, got
'yes'``). A float field keeps an integer as JSON gave it (1 == 1.0: a number written
is the number read).

Not ``runtime.codec``: that one reads the processes' configs, and its types' shapes are
their fields. ``summary.json`` has a shape of its own that tests outside this repository
read, so here a field may have another key than its name (``pass``) and keys that older
writers left out when empty.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from dataclasses import dataclass
from typing import Any

_REQUIRED = "required"       # a field's absent value when its key may not be absent


class SummaryError(ValueError):
    """A ``summary.json`` that is not this format's: one line naming the file (when read
    from one), the key and what was expected there."""


@dataclass(frozen=True)
class _Key:
    """How a field stands in the file (:func:`key`, :func:`flag`)."""
    json: str | None = None         # its key, when not its name
    absent: object = _REQUIRED      # the value it has where the key is left out
    present: str | None = None      # the flag that says whether its key is written
    flag: bool = False              # a flag: no key of its own


_PLAIN = _Key()


def key(json: str | None = None, *, absent=_REQUIRED, present: str | None = None):
    """A field whose JSON key is ``json`` (default: its name), or which may be left out:
    ``absent=None`` (left out when None), ``absent=()`` (left out when empty; a list),
    ``absent=False`` (left out when false), or ``present``: written (null or not) when
    the :func:`flag` of that name is set, and read as None where the key is not."""
    if present:
        absent = None
    meta = {_Key: _Key(json, absent, present)}
    if absent is _REQUIRED:
        return dataclasses.field(metadata=meta)
    if absent == ():
        return dataclasses.field(default_factory=list, metadata=meta)
    return dataclasses.field(default=absent, metadata=meta)


def flag():
    """A part's note of which :func:`key` ``present`` keys it has: no key of its own, set
    on reading from whether they are in the file."""
    return dataclasses.field(default=False, metadata={_Key: _Key(flag=True)})


def _key(f: dataclasses.Field) -> _Key:
    return f.metadata.get(_Key, _PLAIN)


def _written(part, f: dataclasses.Field) -> bool:
    k, value = _key(f), getattr(part, f.name)
    if k.present:
        return getattr(part, k.present)
    if k.flag:
        return False
    if k.absent is _REQUIRED:
        return True
    return bool(value) if k.absent in ((), False) else value is not None


def _name(f: dataclasses.Field) -> str:
    return _key(f).json or f.name


class Part:
    """Mixin of every part of ``summary.json``: ``part.to_json()``, ``Cls.from_json(d)``."""

    def to_json(self) -> dict:
        return {_name(f): encode(getattr(self, f.name)) for f in dataclasses.fields(self)
                if _written(self, f)}

    @classmethod
    def from_json(cls, data, where: str = ""):
        if not isinstance(data, dict):
            raise SummaryError(f"{where or 'the file'}: expected an object, got "
                               f"{_short(data)}")
        hints = _hints(cls)
        fields = [f for f in dataclasses.fields(cls) if not _key(f).flag]
        unknown = set(data) - {_name(f) for f in fields}
        if unknown:
            raise SummaryError(f"{where or 'the file'}: unknown keys {sorted(unknown)}")
        got = {}
        for f in fields:
            k, name = _key(f), _name(f)
            at = f"{where}.{name}" if where else name
            if name in data:
                got[f.name] = decode(hints[f.name], data[name], at)
                if k.present:
                    got[k.present] = True
            elif k.absent is _REQUIRED:
                raise SummaryError(f"{at}: missing")
        return cls(**got)


def required_keys(cls) -> list[tuple[str, Any]]:
    """The keys a part's JSON must hold (those :func:`key` lets be absent left out), each
    with its field's type: what ``emulator.upgrade`` fills in where an older summary
    lacks one."""
    hints = _hints(cls)
    return [(_name(f), hints[f.name]) for f in dataclasses.fields(cls)
            if _key(f).absent is _REQUIRED and not _key(f).flag]


def keys(cls) -> dict[str, Any]:
    """Every key a part's JSON may hold, with its field's type."""
    hints = _hints(cls)
    return {_name(f): hints[f.name] for f in dataclasses.fields(cls) if not _key(f).flag}


@functools.cache
def _hints(cls) -> dict:
    return typing.get_type_hints(cls)


def encode(value):
    if isinstance(value, Part):
        return value.to_json()
    if isinstance(value, (list, tuple)):
        return [encode(x) for x in value]
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    return value


def decode(tp, value, where: str):
    """``value`` as the type ``tp`` says, or a :class:`SummaryError` naming ``where``."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        alternatives = [a for a in args if a is not type(None)]
        if len(alternatives) == 1 and _shaped(alternatives[0], value):
            return decode(alternatives[0], value, where)    # what is wrong inside, named
        for a in alternatives:
            try:
                return decode(a, value, where)
            except SummaryError:
                continue
        raise SummaryError(f"{where}: expected {_said(tp)}, got {_short(value)}")
    if isinstance(tp, type) and issubclass(tp, Part):
        return tp.from_json(value, where)
    if tp is Any:
        return value
    base = origin or tp
    if not _is(base, value):
        raise SummaryError(f"{where}: expected {_said(tp)}, got {_short(value)}")
    if base is list and args:
        return [decode(args[0], x, f"{where}[{i}]") for i, x in enumerate(value)]
    if base is tuple:
        return tuple(decode(args[0], x, f"{where}[{i}]") if args else x
                     for i, x in enumerate(value))
    if base is dict and args:
        return {k: decode(args[1], v, f"{where}[{k!r}]") for k, v in value.items()}
    return value


def _shaped(tp, value) -> bool:
    """Whether ``value`` is the JSON kind of ``tp`` (an object for a part), its insides
    not looked at."""
    if isinstance(tp, type) and issubclass(tp, Part):
        return isinstance(value, dict)
    return tp is Any or _is(typing.get_origin(tp) or tp, value)


def _is(base, value) -> bool:
    if base is bool:
        return isinstance(value, bool)
    if base is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if base is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if base in (list, tuple):
        return isinstance(value, list)          # JSON has arrays only
    return isinstance(value, base)


def _said(tp) -> str:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_said(a) for a in args)
    words = {bool: "a bool", int: "an integer", float: "a number", str: "a string",
             list: "a list", tuple: "a list", dict: "an object", type(None): "null"}
    return words.get(origin or tp, getattr(tp, "__name__", str(tp)))


def _short(value) -> str:
    s = repr(value)
    return s if len(s) <= 60 else s[:57] + "..."
