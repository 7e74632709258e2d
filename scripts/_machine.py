"""Facts about the machine a script ran on, for the reports it writes."""
import datetime as dt
import os
import platform
from contextlib import suppress
from importlib.metadata import PackageNotFoundError, version


def cpu_model() -> str:
    names = []
    with suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as fh:
        names = [line.split(":", 1)[1].strip() for line in fh
                 if line.lower().startswith("model name")]
    return names[0] if names else platform.processor() or "unknown"


def package_version(name: str) -> str | None:
    with suppress(PackageNotFoundError):
        return version(name)
    return None


def load_average():
    with suppress(OSError, AttributeError):
        return [round(x, 2) for x in os.getloadavg()]
    return None


def _cpu_jiffies() -> tuple[int, int, int]:
    """(busy, steal, total) clock ticks of all CPUs since boot, from /proc/stat (Linux only);
    busy counts this guest's own work, steal the time the hypervisor gave other guests."""
    with open("/proc/stat", encoding="ascii") as fh:
        fields = [int(x) for x in fh.readline().split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    return user + nice + system + irq + softirq, steal, sum(fields[:8])


def _own_jiffies() -> int:
    """Clock ticks of CPU used by this process, its live descendants (joblib's workers) and
    the children it has reaped."""
    children, ticks = {}, {}  # parent pid → child pids; pid → CPU ticks
    for pid in (int(entry) for entry in os.listdir("/proc") if entry.isdigit()):
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
                rest = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the process ended meanwhile
        children.setdefault(int(rest[1]), []).append(pid)
        # utime + stime, and for this process cutime + cstime too
        ticks[pid] = sum(int(x) for x in rest[11:15 if pid == os.getpid() else 13])

    def tree(pid: int) -> int:
        return ticks.get(pid, 0) + sum(tree(child) for child in children.get(pid, []))
    return tree(os.getpid())


def at_most(share: float) -> str:
    """An upper bound on a CPU share in words: "< 1%" below half a percent, else "≤ 3%"."""
    return "< 1%" if share < 0.005 else f"≤ {share:.0%}"


def busiest_row(rows) -> tuple[float, str] | None:
    """(share, mechanism) of the benchmark row during which other processes took most of the
    CPU (`OtherLoad`), or None where no row recorded it."""
    return max(((r["other_cpu_share"], r["mechanism"]) for r in rows
                if r.get("other_cpu_share") is not None), default=None)


class OtherLoad:
    """The share of the machine's CPU time that other processes took between `__enter__` and
    `__exit__` (`others`, 0–1 of all CPUs) and that the hypervisor gave other guests (`steal`),
    None without /proc: a benchmark row measured while they were large ran on a busy machine."""

    others: float | None = None
    steal: float | None = None

    def __enter__(self):
        self._start = None
        with suppress(OSError):
            self._start = (_cpu_jiffies(), _own_jiffies())
        return self

    def __exit__(self, *exc):
        if self._start is not None:
            (busy0, steal0, total0), own0 = self._start
            (busy1, steal1, total1), own1 = _cpu_jiffies(), _own_jiffies()
            elapsed = total1 - total0
            if elapsed > 0:
                self.others = round(max(0, busy1 - busy0 - (own1 - own0)) / elapsed, 3)
                self.steal = round((steal1 - steal0) / elapsed, 3)


def machine_meta() -> dict:
    """The facts every report records about where it ran."""
    import numpy as np  # only here: memory.py imports this module without numpy
    return {"platform": platform.platform(), "cpu_model": cpu_model(), "cpu_count": os.cpu_count(),
            "python": platform.python_version(), "numpy": np.__version__,
            **{name: package_version(name) for name in ("scipy", "joblib", "dpverify")},
            "date": dt.datetime.now(dt.timezone.utc).astimezone().isoformat(timespec="seconds"),
            "load_average_at_start": load_average()}
