"""scripts/_machine.py's OtherLoad: CPU that a process outside this one's tree burns is counted
as other load, and CPU of this process's own children is not."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

pytestmark = pytest.mark.skipif(not Path("/proc/stat").exists(), reason="needs Linux /proc")

SPIN = "import time\nt = time.time()\nwhile time.time() - t < {s}: pass\n"


def test_a_busy_neighbour_shows_as_other_load():
    from _machine import OtherLoad
    # sh starts the spinner in the background and exits: the spinner is no descendant of ours
    subprocess.run(["sh", "-c", f'"{sys.executable}" -c "{SPIN.format(s=2.5)}" &'], check=True)
    time.sleep(0.3)
    with OtherLoad() as load:
        time.sleep(1.5)
    # one spinning process holds one of the CPUs for the whole interval
    assert load.others >= 0.5 / os.cpu_count()


# burns `s` seconds of its own CPU time (not wall time: a busy machine only makes it slower),
# says so, then waits to be killed
BURN = ("import sys, time\nwhile time.process_time() < {s}: pass\n"
        "print('burnt', flush=True)\ntime.sleep(60)\n")


def test_own_children_count_as_our_own_cpu():
    from _machine import _own_jiffies
    ticks_per_second = os.sysconf("SC_CLK_TCK")
    before = _own_jiffies()
    child = subprocess.Popen([sys.executable, "-c", BURN.format(s=1.0)], stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout.readline().strip() == "burnt"
        during = _own_jiffies()  # the live child is found in our tree
    finally:
        child.kill()
        child.wait()
    after = _own_jiffies()  # the reaped child is in our cutime
    assert during - before >= 0.8 * ticks_per_second
    assert after - before >= 0.8 * ticks_per_second


def test_the_busiest_row_is_the_one_with_most_other_load():
    from _machine import busiest_row
    rows = [{"mechanism": "a", "other_cpu_share": 0.02}, {"mechanism": "b"},
            {"mechanism": "c", "other_cpu_share": 0.31},
            {"mechanism": "d", "other_cpu_share": None}]
    assert busiest_row(rows) == (0.31, "c")
    assert busiest_row([{"mechanism": "old run"}]) is None
