"""Example audit reports: one broken and one correct mechanism, rendered and screenshotted.

Writes DIR/<name>/ for RNM3 (noisy max returning the value; broken at its claim) and Laplace
(ε = 1, correct, so its curve is visibly away from the diagonal) exactly as `dpverify audit
--report` does, then renders each index.html in headless
Chromium (Debian's chromium package) to DIR/<name>/screenshot.png so a person can check what a
reader sees. Without Chromium the reports are still written and the screenshot is skipped.

Usage: python scripts/example_reports.py --out DIR
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
def examples():
    from mechanisms_under_test import ZOO
    from mechanisms_under_test.basic import make_laplace
    return {"rnm3": ZOO["rnm3"], "laplace_eps1": make_laplace(1.0, name="laplace_eps1")}


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
    import dpverify
    from dpverify.report import write_report

    for name, mech in examples().items():
        folder = (args.out / name).resolve()
        result = dpverify.audit(mech, curves=True)
        document = {"results": [result.as_dict()], "meta": {"dpverify": dpverify.__version__,
                                                              "seed": 0}}
        write_report(folder, document, [result], [mech])
        print(result.summary().splitlines()[0])
        if screenshot(folder / "index.html", folder / "screenshot.png"):
            print(f"  screenshot: {folder / 'screenshot.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
