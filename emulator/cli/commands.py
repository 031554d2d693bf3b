"""The words of the live CLI's commands (``symphony-emu cli``, ``emulator/cli/live.py``):
each command's arguments parsed and checked here, pure, so that a bad one is a message
naming it and what is allowed, and the session goes on. Values after ``key=`` are read
as ``--set`` reads them (``emulator.spec.parse_value``).
"""

from __future__ import annotations

from emulator.perturbations import KINDS
from emulator.spec.schema import MAX_RUN_S
from emulator.spec import parse_value
from emulator.spec.check import SpecError
from runtime.codec import finite

# A live perturbation applies at once and lasts until `unperturb`: the spec's times of
# when it starts (and ends), its kind's timing_keys, have no meaning here.
LIVE_PERTURBATIONS = tuple(sorted((n for n, k in KINDS.items() if k.live),
                                  key=lambda n: KINDS[n].live))


class CommandError(ValueError):
    """A bad argument of a live-CLI command (the message says which and what is allowed)."""


def parse_kv(words: list[str]) -> dict:
    """``key=value`` words as a dict; a word without ``=``, an empty key or value, or a key
    given twice is an error."""
    out = {}
    for w in words:
        key, eq, text = w.partition("=")
        if not eq:
            raise CommandError(f"{w!r}: expected key=value")
        if not key:
            raise CommandError(f"{w!r}: no key before '='")
        if not text:
            raise CommandError(f"{w!r}: no value after '=' (e.g. {key}=1)")
        if key in out:
            raise CommandError(f"{key} given twice")
        try:
            out[key] = parse_value(text, key)
        except SpecError as e:
            raise CommandError(str(e)) from None
    return out


def job_args(words: list[str], known_ids: list[int]) -> tuple[list[int], int | None]:
    """``job [ID ...] [passes=N]``: the job ids (empty: all) and the passes (None: the
    spec's). Ids must be the spec's; passes a plain integer (range: the spec's check)."""
    kv = parse_kv([w for w in words if "=" in w])
    unknown = sorted(set(kv) - {"passes"})
    if unknown:
        raise CommandError(f"unknown option {unknown[0]}={kv[unknown[0]]!r}; allowed: passes=N")
    passes = kv.get("passes")
    if passes is not None and (isinstance(passes, bool) or not isinstance(passes, int)):
        raise CommandError(f"passes={passes!r}: must be an integer (collectives per job)")
    ids = []
    for w in (w for w in words if "=" not in w):
        if not w.isdigit() or int(w) not in known_ids:
            raise CommandError(f"job id {w!r}: the spec's jobs are {known_ids}")
        ids.append(int(w))
    return ids, passes


def wait_seconds(words: list[str], default_s: float) -> float:
    """``wait [SECONDS]``: a finite number of seconds in (0, MAX_RUN_S]."""
    if len(words) > 1:
        raise CommandError("usage: wait [SECONDS]")
    if not words:
        return default_s
    try:
        t = float(words[0])
    except ValueError:
        t = None
    if t is None or not finite(t) or not 0 < t <= MAX_RUN_S:
        raise CommandError(f"wait {words[0]!r}: SECONDS must be a number in (0, {MAX_RUN_S:g}]")
    return t


def run_number(words: list[str], n_runs: int) -> int:
    """``plot [N]``: a run started here, 1..n_runs (default: the last)."""
    if not n_runs:
        raise CommandError("no jobs started yet (`job`)")
    if len(words) > 1 or words and not words[0].isdigit():
        raise CommandError(f"usage: plot [N], N a run number 1..{n_runs}")
    i = int(words[0]) if words else n_runs
    if not 1 <= i <= n_runs:
        raise CommandError(f"no run {i}; runs are 1..{n_runs}")
    return i


def perturb_words(words: list[str]) -> tuple[str, dict]:
    """``perturb KIND key=value ...``: the kind and its keys."""
    if not words:
        raise CommandError("usage: perturb KIND key=value ...; kinds: "
                           + ", ".join(LIVE_PERTURBATIONS))
    return words[0], parse_kv(words[1:])


def live_perturbation(kind: str, kv: dict) -> tuple[dict, bool]:
    """A live perturbation as a ``[[perturbations]]`` table (then validated by the spec's
    own checks), and whether it runs until undone. It applies now: a link goes down at
    once (``at_ms`` = 0); background traffic without ``duration_ms`` runs until
    ``unperturb``."""
    if kind not in LIVE_PERTURBATIONS:
        raise CommandError(f"kind {kind!r}: live perturbations are "
                           f"{', '.join(LIVE_PERTURBATIONS)} (the others are set in the spec)")
    k = KINDS[kind]
    timing = [key for key in k.timing_keys if key in kv]
    if timing:
        raise CommandError(f"{timing[0]}: a live perturbation applies now and lasts until "
                           "`unperturb`; times are for a spec's [[perturbations]]")
    allowed = k.keys - set(k.timing_keys)
    unknown = sorted(set(kv) - allowed)
    if unknown:
        raise CommandError(f"{unknown[0]}: not a key of the {kind} perturbation; its keys: "
                           f"{', '.join(sorted(allowed))}")
    return k.live_entry(kv)


def unperturb_all(words: list[str]) -> bool:
    """``unperturb [all]``: True to undo every perturbation, False the last one."""
    if words not in ([], ["all"]):
        raise CommandError("usage: unperturb [all]")
    return bool(words)
