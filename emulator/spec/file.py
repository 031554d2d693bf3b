"""Reading a spec file, and the values of its overrides, without trusting them (the
loader is ``emulator.spec.load``).

A spec is a *regular* file of UTF-8 TOML of at most :data:`MAX_SPEC_BYTES`, nested at most
:data:`MAX_DEPTH` tables and arrays deep. Anything else is refused with an
:class:`UnreadableSpec` that says why, before the parser sees it: a directory, a device
(a link to ``/dev/zero`` would otherwise be read until memory runs out), a FIFO (opening
one for reading waits for a writer forever), bytes that are not UTF-8, a file too large,
or an array nested thousands deep (the TOML parser recurses once per level).

The file is checked by ``stat`` before it is opened, so a device or FIFO is never opened;
it is opened non-blocking, and the open file is checked again (``fstat``: still a regular
file, still the same one), so a path swapped in between is refused too.
"""

from __future__ import annotations

import os
import stat

try:
    import tomllib
except ModuleNotFoundError:          # Python 3.10
    import tomli as tomllib

MAX_SPEC_BYTES = 1 << 20             # 1 MiB: the largest spec of runs/ is ~3 KB
MAX_DEPTH = 16                       # tables and arrays; a spec needs 4 (job_stream.slots)


class UnreadableSpec(ValueError):
    """The file (or an override's value) cannot be a spec; the message says why."""


def read_text(path: str) -> str:
    """The text of the spec file at ``path`` (symlinks followed to a regular file only)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise UnreadableSpec("no such file") from None
    except OSError as e:
        raise UnreadableSpec(f"cannot read it: {e.strerror}") from None
    _regular(st)
    _small(st.st_size)
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise UnreadableSpec(f"cannot open it: {e.strerror}") from None
    try:
        fst = os.fstat(fd)
        _regular(fst)
        if (fst.st_dev, fst.st_ino) != (st.st_dev, st.st_ino):
            raise UnreadableSpec("the file changed while it was opened; try again")
        data = b""
        while len(data) <= MAX_SPEC_BYTES:
            chunk = os.read(fd, MAX_SPEC_BYTES + 1 - len(data))
            if not chunk:
                break
            data += chunk
    except OSError as e:
        raise UnreadableSpec(f"cannot read it: {e.strerror}") from None
    finally:
        os.close(fd)
    _small(len(data))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise UnreadableSpec(f"not UTF-8 text: byte 0x{data[e.start]:02x} at offset "
                             f"{e.start} (line {line}); a spec is UTF-8 TOML") from None


def parse(text: str, what: str = "") -> dict:
    """TOML text as a dict; ``what`` names the text in messages (e.g. an override)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UnreadableSpec(f"{what}not valid TOML: {e}") from None
    except RecursionError:
        raise UnreadableSpec(f"{what}nested too deeply for the TOML reader; a spec nests "
                             f"at most {MAX_DEPTH} tables and arrays") from None
    except ValueError as e:          # e.g. an integer of more than 4300 digits
        raise UnreadableSpec(f"{what}not a usable TOML value: {e}") from None
    _shallow(data, what)
    return data


def parse_value(text: str, what: str):
    """A value written after ``key=`` (``--set``, the live CLI), read as TOML would read
    it: numbers, true/false, strings, arrays, inline tables; a bare word is a string."""
    text = text.strip()
    try:
        return parse(f"v = {text}", f"{what}: ")["v"]
    except UnreadableSpec as e:
        if "not valid TOML" not in str(e):
            raise
        return text


def set_value(raw: dict, key: str, value) -> None:
    """``raw`` (a spec as read) with ``value`` at the dotted ``key`` (``jobs.0.passes``:
    an index into an array), tables made on the way; a path through a value, or past an
    array's end, is refused."""
    parts = key.split(".")
    node = raw
    for i, p in enumerate(parts[:-1]):
        if isinstance(node, list):
            if not p.isdigit() or int(p) >= len(node):
                raise UnreadableSpec(f"--set {key}: {'.'.join(parts[:i])} has {len(node)} "
                                     f"entries, no index {p!r}")
            node = node[int(p)]
        elif isinstance(node, dict):
            node = node.setdefault(p, {})
        else:
            raise UnreadableSpec(f"--set {key}: {'.'.join(parts[:i])} is a value, not a table")
        if not isinstance(node, (dict, list)):
            raise UnreadableSpec(f"--set {key}: {'.'.join(parts[:i + 1])} is a value, not a "
                                 "table")
    if isinstance(node, list):
        raise UnreadableSpec(f"--set {key}: give an index into {'.'.join(parts[:-1])}")
    node[parts[-1]] = value


def _regular(st: os.stat_result) -> None:
    if stat.S_ISREG(st.st_mode):
        return
    kind = ("a directory" if stat.S_ISDIR(st.st_mode) else
            "a FIFO (named pipe)" if stat.S_ISFIFO(st.st_mode) else
            "a character device" if stat.S_ISCHR(st.st_mode) else
            "a block device" if stat.S_ISBLK(st.st_mode) else
            "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
    raise UnreadableSpec(f"is {kind}; a spec must be a regular file")


def _small(size: int) -> None:
    if size > MAX_SPEC_BYTES:
        raise UnreadableSpec(f"larger than {MAX_SPEC_BYTES} bytes (1 MiB), the most a spec "
                             f"may be ({'at least ' if size == MAX_SPEC_BYTES + 1 else ''}"
                             f"{size} bytes)")


def _shallow(data: dict, what: str) -> None:
    """Refuse nesting deeper than MAX_DEPTH, walking without recursion."""
    todo = [(data, 1, "")]
    while todo:
        node, depth, key = todo.pop()
        if depth > MAX_DEPTH:
            raise UnreadableSpec(f"{what}{key or 'a value'} is nested more than {MAX_DEPTH} "
                                 "tables and arrays deep; a spec needs at most 4")
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for k, v in items:
            if isinstance(v, (dict, list)):
                sub = f"{key}.{k}" if isinstance(node, dict) and key else \
                    f"{key}[{k}]" if key else str(k)
                todo.append((v, depth + 1, sub[:80]))
