"""Facts about the machine a script ran on, for the reports it writes."""
from __future__ import annotations

import os
import platform
from importlib.metadata import PackageNotFoundError, version


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def package_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def load_average():
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return None


def _cpu_jiffies() -> tuple[int, int, int]:
    """(busy, steal, total) clock ticks of all CPUs since boot, from /proc/stat (Linux only);
    busy counts this guest's own work, steal the time the hypervisor gave other guests."""
    with open("/proc/stat", encoding="ascii") as fh:
        fields = [int(x) for x in fh.readline().split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    return user + nice + system + irq + softirq, steal, sum(fields[:8])


def _own_jiffies() -> int:
    """Clock ticks of CPU this process and its live descendants (joblib's workers) used, with
    the children it has reaped."""
    children: dict[int, list[int]] = {}
    ticks: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                rest = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the process ended meanwhile
        pid = int(entry)
        children.setdefault(int(rest[1]), []).append(pid)
        ticks[pid] = int(rest[11]) + int(rest[12])  # utime + stime
        if pid == os.getpid():
            ticks[pid] += int(rest[13]) + int(rest[14])  # cutime + cstime
    total, todo = 0, [os.getpid()]
    while todo:
        pid = todo.pop()
        total += ticks.get(pid, 0)
        todo.extend(children.get(pid, []))
    return total


def at_most(share: float) -> str:
    """An upper bound on a CPU share in words: "< 1%" below half a percent, else "≤ 3%"."""
    return "< 1%" if share < 0.005 else f"≤ {share:.0%}"


def busiest_row(rows) -> tuple[float, str] | None:
    """(share, mechanism) of the benchmark row during which other processes took most of the
    CPU (`OtherLoad`), or None where no row recorded it."""
    shares = [(r["other_cpu_share"], r["mechanism"]) for r in rows
              if r.get("other_cpu_share") is not None]
    return max(shares) if shares else None


class OtherLoad:
    """The share of the machine's CPU time that other processes took between `__enter__` and
    `__exit__` (`others`, 0–1 of all CPUs), and the share the hypervisor gave other guests
    (`steal`): a benchmark row measured while they were large ran on a busy machine. None on
    a system without /proc."""

    others: float | None = None
    steal: float | None = None

    def __enter__(self):
        try:
            self._start = (_cpu_jiffies(), _own_jiffies())
        except OSError:
            self._start = None
        return self

    def __exit__(self, *exc):
        if self._start is None:
            return
        (busy0, steal0, total0), own0 = self._start
        (busy1, steal1, total1), own1 = _cpu_jiffies(), _own_jiffies()
        elapsed = total1 - total0
        if elapsed > 0:
            self.others = round(max(0, busy1 - busy0 - (own1 - own0)) / elapsed, 3)
            self.steal = round((steal1 - steal0) / elapsed, 3)


def machine_meta() -> dict:
    """The facts every report records about where it ran."""
    import datetime as dt

    import numpy as np

    return {"platform": platform.platform(), "cpu_model": cpu_model(),
            "cpu_count": os.cpu_count(), "python": platform.python_version(),
            "numpy": np.__version__, "scipy": package_version("scipy"),
            "joblib": package_version("joblib"), "dpverify": package_version("dpverify"),
            "date": dt.datetime.now(dt.timezone.utc).astimezone().isoformat(timespec="seconds"),
            "load_average_at_start": load_average()}
