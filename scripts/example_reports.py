"""Example audit reports, rendered and screenshotted: five broken mechanisms (one violation for
each way a violation is certified, one of a Rényi claim) and two correct ones, in `examples()`.
Writes DIR/<name>/ as `dpverify audit --report` does, then DIR/<name>/screenshot.png of its
index.html by headless Chromium (Debian's chromium package), skipped without Chromium.

Usage: python scripts/example_reports.py --out DIR
"""
import argparse
import math
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import _common  # noqa: F401  (puts the repository on the path)
import dpverify
from dpverify.interfaces.report import write_report
from mechanisms_under_test import ZOO
from mechanisms_under_test.basic import make_laplace, make_randomized_response
from mechanisms_under_test.noisy_max import make_rnm3
from mechanisms_under_test.svt import make_svt4

CLASSIC_SIGMA = math.sqrt(2 * math.log(1.25 / 1e-5))  # Dwork & Roth Thm A.1 at ε = 1, Δ = 1
CHROMIUM = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--hide-scrollbars", "--window-size=1200,2600")  # screenshot() adds a fresh profile


@dpverify.mechanism(epsilon=1.0, delta=1e-5, pairs=[(0.0, 1.0)], name="gaussian_half_sigma")
def gaussian_half_sigma(data, rng, size):
    """A Gaussian mechanism whose σ is half what its (1, 10⁻⁵) claim needs."""
    return data + rng.normal(0.0, CLASSIC_SIGMA / 2, size)


@dpverify.mechanism(rdp=(2.0, 1.0), pairs=[(0.0, 1.0)], name="gaussian_rdp_half_sigma")
def gaussian_rdp_half_sigma(data, rng, size):
    """A Gaussian claiming D_2 ≤ 1 (σ = 1 at sensitivity 1) with σ = 1/2: D_2 = 4."""
    return data + rng.normal(0.0, 0.5, size)


def examples() -> dict:
    """name → (mechanism, audit options), in the order docs/results.md describes them."""
    curves, measure = {"curves": True}, {"curves": True, "stop_early": False}
    return {"rnm3": (make_rnm3(), curves),
            "svt4_eps1": (make_svt4(epsilon=1.0, name="svt4_eps1"), measure),
            "gaussian_half_sigma": (gaussian_half_sigma, measure),
            "noisy_hist2": (ZOO["noisy_hist2"], measure),
            "laplace_eps1": (make_laplace(1.0, name="laplace_eps1"), curves),
            "randomized_response": (make_randomized_response(1.0, name="randomized_response"),
                                    curves),
            "gaussian_rdp_half_sigma": (gaussian_rdp_half_sigma, {})}


def screenshot(html: Path, png: Path) -> None:
    """`html` rendered by headless Chromium to `png`, skipped without Chromium."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        print("chromium not found: skipping the screenshot (apt-get install chromium)")
        return
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([browser, *CHROMIUM, f"--user-data-dir={profile}", f"--screenshot={png}",
                        html.as_uri()], check=True, capture_output=True, timeout=120)
    print(f"  screenshot: {png}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    for name, (mech, options) in examples().items():
        folder = (args.out / name).resolve()
        result = dpverify.audit(mech, **options)
        meta = {"dpverify": dpverify.__version__, "seed": 0}
        write_report(folder, {"results": [result.as_dict()], "meta": meta}, [result], [mech])
        print(result.summary().splitlines()[0])
        screenshot(folder / "index.html", folder / "screenshot.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
