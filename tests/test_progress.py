"""The one throttle behind every progress line (emulator.progress)."""

from emulator.cli.common import progress_printer
from emulator.progress import Every


def test_a_line_is_due_first_after_first_s_then_every_every_s_after_the_last():
    every = Every(15.0, start=100.0, first_s=10.0)
    due = [t for t in (105.0, 110.0, 120.0, 125.0, 126.0, 141.0) if every.due(t)]
    assert due == [110.0, 125.0, 141.0]


def test_the_launchers_line_off_a_terminal_comes_every_ten_seconds_and_at_the_end(capsys):
    show = progress_printer("sweep", "runs")
    for done, elapsed in [(1, 3.0), (2, 10.0), (3, 15.0), (4, 21.0), (5, 22.0), (5, 23.0)]:
        show(done, 5, elapsed)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(",")[0] for line in lines] == [
        "sweep: runs 2/5 ( 40%)", "sweep: runs 4/5 ( 80%)", "sweep: runs 5/5 (100%)"]
