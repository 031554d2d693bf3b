"""Hostile specs (issue 13): every number finite and in its declared range, the file a
regular UTF-8 file of at most 1 MiB read without hanging on FIFOs or devices, the name one
path component; each rejected with one line naming the file, the key, the value and what
is allowed. And the warnings of specs that are valid but cannot do what they say.

The bad specs start from ``tests.spec_util.BASE`` (2 leaves x 2 hosts, one ring
all-reduce, D = 1000, timeout 600 s) and break one thing. ``BAD`` and ``FILE_CASES`` are
plain data so that ``/work/logs``-style scripts can replay them against any version.
"""

import math
import os
import stat
import subprocess
import sys

import pytest

from emulator.spec import load
from emulator.spec.check import SpecError
from emulator.plan.timing import warnings
from tests.spec_util import BASE, spec_with
from tests.toml_util import assert_spec_error, to_toml

INF, NAN = math.inf, math.nan
LINK = {"kind": "link_down", "switch": "leaf0", "toward": "spine0", "at_ms": 1.0}
BG = {"kind": "background", "src": "h0", "dst": "h3", "rate_gbps": 1.0, "start_ms": 0.0,
      "duration_ms": 1.0}
STRAGGLER = {"kind": "straggler", "host": "h0", "delay_us": 10.0}
IMBALANCE = {"kind": "imbalance", "switch": "leaf0", "toward": "spine0", "ratio": 1.5}
WORKLOAD = {"id": 1, "hosts": "all", "rings": "rail", "workload": "resnet50"}
MESSAGE = {"src": "h0", "dst": "h3", "bytes": 4096}
STREAM = {"seed": 1, "slots": [["h0", "h2"], ["h1", "h3"]], "jobs_per_slot": 2,
          "size_bytes": [4096], "passes": [1, 2], "gap_ms": [0.0, 1.0]}


def pert(base: dict, **kw) -> tuple:
    return ("perturbations", [dict(base, **kw)])


# (id, changes, removed keys, substrings of the error: key = value and what is allowed)
BAD = [
    # scale and topology
    ("dilation-inf", [("scale.dilation", INF)], (), ["scale.dilation = inf", "[0.001, 10000000]"]),
    ("dilation-nan", [("scale.dilation", NAN)], (), ["scale.dilation = nan", "finite"]),
    ("dilation-tiny", [("scale.dilation", 1e-300)], (), ["scale.dilation = 1e-300", "[0.001,"]),
    ("dilation-huge", [("scale.dilation", 1e12)], (), ["scale.dilation = 1000000000000.0", "10000000]"]),
    ("dilation-negative", [("scale.dilation", -5.0)], (), ["scale.dilation = -5.0", "must be > 0"]),
    ("link-rate-inf", [("topology.link_rate_gbps", INF)], (),
     ["topology.link_rate_gbps = inf", "[0.001, 10000] Gb/s"]),
    ("link-rate-nan", [("topology.link_rate_gbps", NAN)], (),
     ["topology.link_rate_gbps = nan", "finite"]),
    ("link-rate-tiny", [("topology.link_rate_gbps", 1e-300)], (),
     ["topology.link_rate_gbps = 1e-300", "[0.001, 10000] Gb/s"]),
    ("link-rate-huge", [("topology.link_rate_gbps", 1e12)], (),
     ["topology.link_rate_gbps = 1000000000000.0", "[0.001, 10000] Gb/s"]),
    ("buffer-2**62", [("topology.buffer_bytes", 2**62)], (),
     [f"topology.buffer_bytes = {2**62}", "<= 2**30"]),
    ("buffer-negative", [("topology.buffer_bytes", -1)], (), ["topology.buffer_bytes = -1", ">= 16384"]),
    ("leaves-huge", [("topology.leaves", 10**6)], (), ["topology.leaves = 1000000", "1..128"]),
    ("oversubscription-inf", [("topology.oversubscription", INF)], (),
     ["topology.oversubscription = inf", "[0.001, 1000]"]),
    ("oversubscription-nan", [("topology.oversubscription", NAN)], (),
     ["topology.oversubscription = nan", "finite"]),
    ("oversubscription-huge", [("topology.oversubscription", 1e300)], (),
     ["topology.oversubscription = 1e+300", "[0.001, 1000]"]),
    # switch and Symphony
    ("kmax-huge", [("switch.kmax_bytes", 2**62)], (), [f"switch.kmax_bytes = {2**62}", "0..1073741824"]),
    ("kmin-negative", [("switch.kmin_bytes", -1)], (), ["switch.kmin_bytes = -1", "0..1073741824"]),
    ("kmax-inf", [("switch.kmax_bytes", INF)], (), ["switch.kmax_bytes = inf", "must be an integer"]),
    ("pmax-nan", [("switch.pmax", NAN)], (), ["switch.pmax = nan", "[0, 1]"]),
    ("red-string", [("switch.red", "false")], (), ["switch.red = 'false'", "true or false"]),
    ("k-inf", [("symphony.k", INF)], (), ["symphony.k = inf", "must be >= 0: a finite number in [0, 100]"]),
    ("k-nan", [("symphony.k", NAN)], (), ["symphony.k = nan", "[0, 100]"]),
    ("k-huge", [("symphony.k", 1e300)], (), ["symphony.k = 1e+300", "[0, 100]"]),
    ("tau-nan", [("symphony.tau", NAN)], (), ["symphony.tau = nan", "[0, 1]"]),
    ("tau-inf", [("symphony.tau", INF)], (), ["symphony.tau = inf", "[0, 1]"]),
    ("t-win-denormal", [("symphony.t_win_us", 5e-324)], (),
     ["symphony.t_win_us = 5e-324", "[0.1, 1000000000] µs at real scale"]),
    ("t-win-inf", [("symphony.t_win_us", INF)], (), ["symphony.t_win_us = inf", "at most 1000000 s"]),
    ("t-win-huge", [("symphony.t_win_us", 1e300)], (), ["symphony.t_win_us = 1e+300", "µs at real scale"]),
    ("n-sample-huge", [("symphony.n_sample", 10**12)], (),
     ["symphony.n_sample = 1000000000000", "0..1000000"]),
    ("n-warmup-huge", [("symphony.n_warmup", 2**62)], (), [f"symphony.n_warmup = {2**62}", "0..1000000"]),
    # transport
    ("rto-tiny", [("transport.rto_us", 1e-300)], (),
     ["transport.rto_us = 1e-300", "must be >= 3.28 µs, one 4096-byte frame's time at 10 Gb/s"]),
    ("rto-inf", [("transport.rto_us", INF)], (), ["transport.rto_us = inf", "µs at real scale"]),
    ("rto-nan", [("transport.rto_us", NAN)], (), ["transport.rto_us = nan", "finite"]),
    ("rto-huge", [("transport.rto_us", 1e300)], (), ["transport.rto_us = 1e+300", "at most 1000000 s"]),
    ("nak-timeout-inf", [("transport.nak_timeout_us", INF)], (),
     ["transport.nak_timeout_us = inf", "µs at real scale"]),
    ("nak-timeout-tiny", [("transport.nak_timeout_us", 1e-9)], (),
     ["transport.nak_timeout_us = 1e-09", "one 4096-byte frame's time"]),
    ("ack-every-huge", [("transport.ack_every", 10**9)], (),
     ["transport.ack_every = 1000000000", "1..1024"]),
    # run
    ("timeout-inf", [("run.timeout_s", INF)], (),
     ["run.timeout_s = inf", "(0, 1000000] s (wall clock, emulated)"]),
    ("timeout-nan", [("run.timeout_s", NAN)], (), ["run.timeout_s = nan", "finite"]),
    ("timeout-huge", [("run.timeout_s", 1e300)], (), ["run.timeout_s = 1e+300", "(0, 1000000]"]),
    ("seed-negative", [("run.seeds", [-1])], (),
     ["run.seeds = [-1]", "seed -1 out of range", "0..4294967295"]),
    ("seed-huge", [("run.seeds", [2**63 - 1])], (),
     [f"run.seeds = [{2**63 - 1}]", "0..4294967295"]),
    ("seed-count-huge", [("run.seeds", 10**15)], (),
     ["run.seeds = 1000000000000000", "at most 10000"]),
    ("seed-float", [("run.seeds", [1.5])], (), ["run.seeds = [1.5]", "a list of integers"]),
    # jobs
    ("compute-gap-inf", [("jobs.0.compute_gap_us", INF)], (),
     ["jobs[0].compute_gap_us = inf", "must be >= 0: a finite time in [0, 1000000000] µs"]),
    ("compute-gap-nan", [("jobs.0.compute_gap_us", NAN)], (), ["jobs[0].compute_gap_us = nan", "finite"]),
    ("compute-gap-huge", [("jobs.0.compute_gap_us", 1e300)], (),
     ["jobs[0].compute_gap_us = 1e+300", "at most 1000000 s once dilated by D = 1000"]),
    ("start-ms-huge", [("jobs.0.start_ms", 1e300)], (),
     ["jobs[0].start_ms = 1e+300", "[0, 1000000] ms at real scale"]),
    ("start-ms-inf", [("jobs.0.start_ms", INF)], (), ["jobs[0].start_ms = inf", "ms at real scale"]),
    ("start-ms-nan", [("jobs.0.start_ms", NAN)], (), ["jobs[0].start_ms = nan", "finite"]),
    ("start-ms-huge-at-d-2000", [("scale.dilation", 2000.0), ("jobs.0.start_ms", 6e5)], (),
     ["jobs[0].start_ms = 600000.0", "[0, 500000] ms", "D = 2000"]),
    ("passes-float", [("jobs.0.passes", 1.5)], (), ["jobs[0].passes = 1.5", "must be an integer"]),
    ("passes-string", [("jobs.0.passes", "abc")], (), ["jobs[0].passes = 'abc'", "must be an integer"]),
    ("gib-times-10000-passes", [("jobs.0.size_bytes", 1 << 30), ("jobs.0.passes", 10_000)],
     ("jobs.0.chunk_bytes",),
     ["jobs[0].passes = 10000", f"10000 x {1 << 30} B is more than 2**36 B (64 GiB)"]),
    ("chunk-times-passes", [("jobs.0.chunk_bytes", 1 << 28), ("jobs.0.passes", 100)], (),
     ["jobs[0].passes = 100", f"100 x {4 << 28} B is more than 2**36"]),
    ("chunk-2**62", [("jobs.0.chunk_bytes", 2**62)], (), [f"jobs[0].chunk_bytes = {2**62}", "<= 1 GiB"]),
    ("gradient-scale-nan", [("jobs", [dict(WORKLOAD, gradient_scale=NAN)])], (),
     ["jobs[0].gradient_scale = nan", "(0, 1]"]),
    ("bucket-mb-inf", [("jobs", [dict(WORKLOAD, bucket_mb=INF)])], (),
     ["jobs[0].bucket_mb = inf", "[0.001, 10000] MiB"]),
    ("bucket-mb-huge", [("jobs", [dict(WORKLOAD, bucket_mb=1e300)])], (),
     ["jobs[0].bucket_mb = 1e+300", "[0.001, 10000] MiB"]),
    ("compute-speedup-inf", [("jobs", [dict(WORKLOAD, compute_speedup=INF)])], (),
     ["jobs[0].compute_speedup = inf", "[0.001, 1000000]"]),
    ("compute-speedup-zero", [("jobs", [dict(WORKLOAD, compute_speedup=0.0)])], (),
     ["jobs[0].compute_speedup = 0.0", "[0.001, 1000000]"]),
    # perturbations
    ("straggler-delay-inf", [pert(STRAGGLER, delay_us=INF)], (),
     ["perturbations[0].delay_us = inf", "must be > 0: a finite time in (0, 1000000000] µs"]),
    ("straggler-delay-nan", [pert(STRAGGLER, delay_us=NAN)], (), ["perturbations[0].delay_us = nan", "finite"]),
    ("straggler-delay-huge", [pert(STRAGGLER, delay_us=1e300)], (),
     ["perturbations[0].delay_us = 1e+300", "at most 1000000 s"]),
    ("link-down-at-inf", [pert(LINK, at_ms=INF)], (), ["perturbations[0].at_ms = inf", "ms at real scale"]),
    ("link-down-at-nan", [pert(LINK, at_ms=NAN)], (), ["perturbations[0].at_ms = nan", "finite"]),
    ("link-down-at-1e9", [pert(LINK, at_ms=1e9)], (),
     ["perturbations[0].at_ms = 1000000000.0", "[0, 1000000] ms"]),
    ("link-down-up-inf", [pert(LINK, up_ms=INF)], (),
     ["perturbations[0].up_ms = inf", "(-1: never up again)"]),
    ("imbalance-ratio-inf", [pert(IMBALANCE, ratio=INF)], (),
     ["perturbations[0].ratio = inf", "[1, 1000] (a slower hop)"]),
    ("imbalance-ratio-nan", [pert(IMBALANCE, ratio=NAN)], (), ["perturbations[0].ratio = nan", "[1, 1000]"]),
    ("imbalance-ratio-huge", [pert(IMBALANCE, ratio=1e300)], (),
     ["perturbations[0].ratio = 1e+300", "[1, 1000]"]),
    ("background-rate-nan", [pert(BG, rate_gbps=NAN)], (),
     ["perturbations[0].rate_gbps = nan", "must be in (0, link rate 10.0]"]),
    ("background-duration-inf", [pert(BG, duration_ms=INF)], (),
     ["perturbations[0].duration_ms = inf", "ms at real scale"]),
    ("background-start-inf", [pert(BG, start_ms=INF)], (),
     ["perturbations[0].start_ms = inf", "ms at real scale"]),
    ("loss-fraction-nan", [pert({"kind": "loss", "switch": "leaf0"}, fraction=NAN)], (),
     ["perturbations[0].fraction = nan", "must be in (0, 1)"]),
    ("late-start-at-inf", [pert({"kind": "symphony_late_start"}, at_ms=INF)], (),
     ["perturbations[0].at_ms = inf", "ms at real scale"]),
    # messages and the job stream
    ("message-start-inf", [("messages", [dict(MESSAGE, start_ms=INF)])], ("jobs",),
     ["messages[0].start_ms = inf", "ms at real scale"]),
    ("message-start-huge", [("messages", [dict(MESSAGE, start_ms=1e300)])], ("jobs",),
     ["messages[0].start_ms = 1e+300", "[0, 1000000] ms"]),
    ("stream-gap-inf", [("job_stream", dict(STREAM, gap_ms=[0.0, INF]))], ("jobs",),
     ["job_stream.gap_ms = [0.0, inf]", "finite"]),
    ("stream-seed-negative", [("job_stream", dict(STREAM, seed=-1))], ("jobs",),
     ["job_stream.seed = -1", "must be an integer >= 0"]),
    # names that would leave the output folder, and other strings
    ("name-dotdot", [("name", "../../escape")], (), ["name = '../../escape'", "no '/'"]),
    ("name-absolute", [("name", "/tmp/abs")], (), ["name = '/tmp/abs'", "a folder name"]),
    ("name-dot-dot-only", [("name", "..")], (), ["name = '..'", "not starting with '.'"]),
    ("name-nul", [("name", "a\x00b")], (), ["name = 'a\\x00b'", "printable"]),
    ("name-newline", [("name", "a\nb")], (), ["name = 'a\\nb'", "printable"]),
    ("name-too-long", [("name", "x" * 300)], (), ["name = 'xxxx", "1..100 printable characters"]),
    ("name-not-a-string", [("name", 5)], (), ["name = 5", "must be a non-empty string"]),
    ("variant-name-escapes", [("variants", [{"name": "../up", "set": []}])], (),
     ["variants[0].name = '../up'", "a folder name"]),
    ("description-not-a-string", [("description", [1, 2])], (),
     ["description = [1, 2]", "must be a string"]),
    ("variant-sets-inf", [("variants", [{"name": "v", "set": ["scale.dilation=inf"]}])], (),
     ["variant 'v'", "scale.dilation = inf", "finite"]),
]

# --set overrides: (id, overrides, substrings)
BAD_OVERRIDES = [
    ("set-dilation-inf", ["scale.dilation=inf"], ["scale.dilation = inf", "finite"]),
    ("set-deep-array", ["jobs.0.hosts=" + "[" * 5000 + "]" * 5000],
     ["--set jobs.0.hosts", "nested too deeply"]),
    ("set-100-deep-array", ["jobs.0.hosts=" + "[" * 100 + "]" * 100],
     ["--set jobs.0.hosts", "nested more than 16"]),
    ("set-5000-digit-int", ["topology.leaves=" + "9" * 5000],
     ["--set topology.leaves", "not a usable TOML value", "4300 digits"]),
    ("set-name-escape", ["name=../x"], ["name = '../x'", "a folder name"]),
]

FILE_CASES = {
    # kind -> substrings of the error (after the file's path)
    "directory": ["is a directory; a spec must be a regular file"],
    "fifo": ["is a FIFO (named pipe); a spec must be a regular file"],
    "symlink-to-fifo": ["is a FIFO (named pipe)"],
    "symlink-to-dev-zero": ["is a character device; a spec must be a regular file"],
    "dev-null": ["is a character device"],
    "non-utf8": ["not UTF-8 text: byte 0xff at offset 11 (line 2)"],
    "too-large": ["larger than 1048576 bytes (1 MiB), the most a spec may be"],
    "deep-array-5000": ["nested too deeply for the TOML reader"],
    "deep-array-200": ["x[0][0][0]", "is nested more than 16 tables and arrays deep"],
    "deep-tables-100": ["is nested more than 16 tables and arrays deep"],
    "huge-integer": ["not a usable TOML value", "4300 digits"],
    "broken-symlink": ["no such file"],
}


def make_file_case(kind: str, folder: str) -> str:
    """The hostile spec file of ``kind`` in ``folder``; returns its path."""
    path = os.path.join(folder, kind + ".toml")
    if kind == "directory":
        os.mkdir(path)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink-to-fifo":
        os.mkfifo(path + ".fifo")
        os.symlink(path + ".fifo", path)
    elif kind == "symlink-to-dev-zero":
        os.symlink("/dev/zero", path)
    elif kind == "dev-null":
        return "/dev/null"
    elif kind == "broken-symlink":
        os.symlink(path + ".missing", path)
    else:
        body = {"non-utf8": b'name = "x"\n\xff\xfe = 1\n',
                "too-large": b'name = "big"\n' + b"#" * (2 << 20) + b"\n" + to_toml(BASE).encode(),
                "deep-array-5000": b"x = " + b"[" * 5000 + b"]" * 5000 + b"\n",
                "deep-array-200": b"x = " + b"[" * 200 + b"]" * 200 + b"\n",
                "deep-tables-100": "\n".join(["[" + ".".join(["t"] * 100) + "]", "v = 1"]).encode(),
                "huge-integer": b"x = " + b"7" * 5000 + b"\n"}[kind]
        with open(path, "wb") as f:
            f.write(body)
    return path


# --- every bad spec: one clean SpecError naming file, key, value, what is allowed -------

@pytest.mark.parametrize("changes,remove,expected", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_number_or_name_is_rejected_naming_key_value_and_range(tmp_path, changes, remove,
                                                                   expected):
    msg = assert_spec_error(spec_with(tmp_path, *changes, remove=remove), *expected)
    assert "\n" not in msg and len(msg) < 2100


@pytest.mark.parametrize("overrides,expected", [c[1:] for c in BAD_OVERRIDES],
                         ids=[c[0] for c in BAD_OVERRIDES])
def test_bad_override_is_rejected_naming_the_key(tmp_path, overrides, expected):
    with pytest.raises(SpecError) as e:
        load(spec_with(tmp_path), overrides)
    for s in expected:
        assert s in str(e.value), str(e.value)
    assert "\n" not in str(e.value) and len(str(e.value)) < 2100


def test_there_are_at_least_60_distinct_bad_specs():
    ids = [c[0] for c in BAD + BAD_OVERRIDES] + list(FILE_CASES)
    assert len(set(ids)) == len(ids) >= 100


@pytest.mark.parametrize("kind", sorted(FILE_CASES))
def test_hostile_file_is_refused_at_once_naming_it(tmp_path, kind):
    path = make_file_case(kind, str(tmp_path))
    msg = assert_spec_error(path, *FILE_CASES[kind])
    assert msg.startswith(path + ": ")


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    """Run in a child process with a deadline: before, reading a FIFO waited forever."""
    path = make_file_case("fifo", str(tmp_path))
    code = ("import sys; from emulator.spec import load\n"
            "from emulator.spec.check import SpecError\n"
            "try: load(sys.argv[1])\nexcept SpecError as e: print(e)")
    out = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True,
                         timeout=30, cwd=os.path.dirname(os.path.dirname(__file__)))
    assert "is a FIFO (named pipe)" in out.stdout, out.stdout + out.stderr
    assert stat.S_ISFIFO(os.stat(path).st_mode)


def test_a_symlink_to_a_regular_spec_is_followed(tmp_path):
    real = spec_with(tmp_path)
    link = str(tmp_path / "link.toml")
    os.symlink(real, link)
    assert load(link).name == "mini"


def test_a_spec_just_under_the_size_cap_loads(tmp_path):
    from emulator.spec.file import MAX_SPEC_BYTES
    text = to_toml(BASE)
    path = tmp_path / "padded.toml"
    path.write_text(text + "#" * (MAX_SPEC_BYTES - len(text.encode()) - 1) + "\n")
    assert os.path.getsize(path) == MAX_SPEC_BYTES
    assert load(str(path)).name == "mini"


def test_the_cli_prints_a_bad_spec_as_one_line_and_exits_2(tmp_path):
    path = make_file_case("non-utf8", str(tmp_path))
    for command in ("validate", "predict"):
        out = subprocess.run([sys.executable, "-m", "emulator", command, path],
                             capture_output=True, text=True, timeout=60,
                             cwd=os.path.dirname(os.path.dirname(__file__)))
        assert out.returncode == 2, out.stderr
        assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
        assert out.stderr.startswith(f"symphony-emu {command}: {path}: not UTF-8 text")


# --- valid specs that cannot do what they say: warnings --------------------------------

def warnings_of(tmp_path, *changes, remove=()):
    return warnings(load(spec_with(tmp_path, *changes, remove=remove)))


def test_the_base_spec_and_the_experiment_specs_have_no_warnings(tmp_path):
    assert warnings_of(tmp_path) == []
    runs = os.path.join(os.path.dirname(os.path.dirname(__file__)), "runs")
    for name in sorted(os.listdir(runs)):
        if name.endswith(".toml"):
            assert warnings(load(os.path.join(runs, name))) == [], name


def test_a_link_down_after_the_timeout_is_a_warning_that_it_never_fires(tmp_path):
    # D = 1000, timeout 600 s emulated = 600 ms at real scale
    (w,) = warnings_of(tmp_path, pert(LINK, at_ms=700.0))
    assert w.startswith("perturbations[0].at_ms = 700 ms (link_down): at or after the run's "
                        "timeout (run.timeout_s = 600 s emulated, 600 ms at real scale)")
    assert w.endswith("it never fires")


def test_a_flap_whose_up_is_after_the_timeout_warns_about_up_ms_only(tmp_path):
    (w,) = warnings_of(tmp_path, pert(LINK, at_ms=0.01, up_ms=650.0))
    assert w.startswith("perturbations[0].up_ms = 650 ms") and "never fires" in w


def test_a_perturbation_long_after_the_jobs_lockstep_end_is_a_warning(tmp_path):
    # one 4 KB-chunk ring pass at 10 Gb/s: microseconds; 100 ms is far beyond 10x that
    (w,) = warnings_of(tmp_path, pert({"kind": "symphony_late_start"}, at_ms=100.0))
    assert w.startswith("perturbations[0].at_ms = 100 ms (symphony_late_start): after 10x "
                        "the jobs' lockstep end (")
    assert "most likely fires once every job has ended" in w


def test_a_job_starting_after_the_timeout_is_a_warning_that_it_never_runs(tmp_path):
    (w,) = warnings_of(tmp_path, ("jobs.0.start_ms", 601.0))
    assert w == ("jobs[0] (job 1) would start at 601 ms, at or after the run's timeout "
                 "(run.timeout_s = 600 s emulated, 600 ms at real scale): it never runs")


def test_jobs_whose_lockstep_bound_outlasts_the_timeout_are_a_warning(tmp_path):
    # 2 rail rings of 2: 2 steps of 16 MiB per pass at 10 Mb/s emulated = 27 s; x 30
    (w,) = warnings_of(tmp_path, ("jobs.0.chunk_bytes", 1 << 24), ("jobs.0.passes", 30))
    assert w.startswith("jobs[0] (job 1): its lockstep bound alone ends at ")
    end_s = float(w.split("(")[2].split(" s emulated")[0])
    payload_s = 30 * 2 * (1 << 24) * 8 / 10e6                  # 805 s; + headers: < 2 %
    assert payload_s < end_s < 1.02 * payload_s
    assert "the run times out before the job finishes" in w


def test_a_straggler_delay_counts_in_the_lockstep_end(tmp_path):
    # 2 steps x 4 passes x 100 ms real = 800 ms > 600 ms: the job cannot end in time
    (w,) = warnings_of(tmp_path, ("jobs.0.passes", 4), pert(STRAGGLER, delay_us=100_000.0))
    assert w.startswith("jobs[0] (job 1): its lockstep bound alone ends at 800")


def test_the_cli_prints_each_warning_and_goes_on(tmp_path, capsys):
    from emulator import cli
    path = spec_with(tmp_path, pert(LINK, at_ms=700.0))
    assert cli.main(["validate", path]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [f"symphony-emu validate: warning: {path}: perturbations[0].at_ms = 700 ms "
                   "(link_down): at or after the run's timeout (run.timeout_s = 600 s emulated, "
                   "600 ms at real scale): it never fires"]
