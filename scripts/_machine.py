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
