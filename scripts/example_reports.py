"""Example audit reports: five broken and two correct mechanisms, one violation for each way a
violation is certified and one of a Rényi claim, rendered and screenshotted.

Writes DIR/<name>/ exactly as `dpverify audit --report` does for
- rnm3: Report Noisy Max releasing the max value (claim 0.1, true 0.25), an ordinary audit:
  violated, proved by the betting test (its wealth picture);
- svt4_eps1: the sparse vector technique's variant 4 (Lyu et al. 2017) claiming ε = 1 on 10
  queries (true ε = 1.75), a measurement run (`--measure`): violated, one event certified on
  fresh runs by the coupled t-test, with every curve picture;
- gaussian_half_sigma: a Gaussian mechanism claiming (ε = 1, δ = 10⁻⁵) whose σ is half the
  classic calibration's (true δ(1) ≈ 1.7·10⁻³), a measurement run: violated, certified by two
  Clopper–Pearson bounds, with a δ > 0 claim;
- noisy_hist2: a histogram whose Laplace scale is ε rather than 1/ε (claim 0.1, true 10), a
  measurement run: violated, certified by the conditional ratio test;
- laplace_eps1: Laplace with ε = 1, correct;
- randomized_response: binary randomized response with ε = 1, correct;
- gaussian_rdp_half_sigma: a Gaussian claiming (α = 2, ρ = 1)-RDP with σ = 1/2 (true D_2 = 4):
  violated, its witness's box outside the band of partitions the claim allows;
then renders each index.html in headless Chromium (Debian's chromium package) to
DIR/<name>/screenshot.png so a person can check what a reader sees. Without Chromium the
reports are still written and the screenshot is skipped.

Usage: python scripts/example_reports.py --out DIR
"""
from __future__ import annotations

import argparse
import math
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import _common  # noqa: E402,F401  (puts the repository on the path)
import dpverify  # noqa: E402
from mechanisms_under_test import ZOO  # noqa: E402
from mechanisms_under_test.basic import make_laplace, make_randomized_response  # noqa: E402
from mechanisms_under_test.noisy_max import make_rnm3  # noqa: E402
from mechanisms_under_test.svt import make_svt4  # noqa: E402

CLASSIC_SIGMA = math.sqrt(2 * math.log(1.25 / 1e-5))  # Dwork & Roth Thm A.1 at ε = 1, Δ = 1


@dpverify.mechanism(epsilon=1.0, delta=1e-5, pairs=[(0.0, 1.0)], name="gaussian_half_sigma")
def gaussian_half_sigma(data, rng, size):
    """A Gaussian mechanism whose σ is half what its (1, 10⁻⁵) claim needs."""
    return data + rng.normal(0.0, CLASSIC_SIGMA / 2, size)


@dpverify.mechanism(rdp=(2.0, 1.0), pairs=[(0.0, 1.0)], name="gaussian_rdp_half_sigma")
def gaussian_rdp_half_sigma(data, rng, size):
    """A Gaussian claiming D_2 ≤ 1 (σ = 1 at sensitivity 1) with σ = 1/2: D_2 = 4."""
    return data + rng.normal(0.0, 0.5, size)


def examples() -> dict:
    """name → (mechanism, audit options): (ε, δ) claims with the report's curves."""
    curves, measure = {"curves": True}, {"curves": True, "stop_early": False}
    return {"rnm3": (make_rnm3(), curves),
            "svt4_eps1": (make_svt4(epsilon=1.0, name="svt4_eps1"), measure),
            "gaussian_half_sigma": (gaussian_half_sigma, measure),
            "noisy_hist2": (ZOO["noisy_hist2"], measure),
            "laplace_eps1": (make_laplace(1.0, name="laplace_eps1"), curves),
            "randomized_response": (make_randomized_response(1.0, name="randomized_response"),
                                    curves),
            "gaussian_rdp_half_sigma": (gaussian_rdp_half_sigma, {})}


def screenshot(html: Path, png: Path) -> bool:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        print("chromium not found: skipping the screenshot (apt-get install chromium)")
        return False
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                        "--no-first-run", "--disable-background-networking",
                        "--disable-component-update", "--disable-sync",
                        f"--user-data-dir={profile}", "--hide-scrollbars",
                        "--window-size=1200,2600", f"--screenshot={png}", html.as_uri()],
                       check=True, capture_output=True, timeout=120)
    return png.exists()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    from dpverify.interfaces.report import write_report

    for name, (mech, options) in examples().items():
        folder = (args.out / name).resolve()
        result = dpverify.audit(mech, **options)
        document = {"results": [result.as_dict()], "meta": {"dpverify": dpverify.__version__,
                                                              "seed": 0}}
        write_report(folder, document, [result], [mech])
        print(result.summary().splitlines()[0])
        if screenshot(folder / "index.html", folder / "screenshot.png"):
            print(f"  screenshot: {folder / 'screenshot.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
