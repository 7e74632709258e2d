"""Every kind of result reports through one protocol (`result.kind`, interfaces/report_kinds.py):
its JSON names its kind, and `dpverify audit FILE --report DIR` writes a page and pictures for
each, here for an RDP claim (the other kinds: test_cli.py, test_zcdp.py, test_fdp.py)."""
import json

import numpy as np
import pytest

import dpverify
from dpverify.interfaces.report_kinds import entry_kind
from drawn_pictures import _two_cell_renyi  # D_α written out apart from the package

RDP_FILE = """import dpverify

@dpverify.mechanism(rdp=(2.0, 1.0), pairs=[(0.0, 1.0)])
def gauss_ok(data, rng, size):          # D_2 = 2 / (2 sigma^2) = 1: meets its claim
    return data + rng.normal(0.0, 1.0, size)

@dpverify.mechanism(rdp=(2.0, 1.0), pairs=[(0.0, 1.0)])
def gauss_bad(data, rng, size):         # sigma = 0.5: D_2 = 4
    return data + rng.normal(0.0, 0.5, size)
"""


@pytest.fixture(scope="module")
def rdp_report(tmp_path_factory):
    from dpverify.interfaces.cli import main
    folder = tmp_path_factory.mktemp("rdp")
    (folder / "mechs.py").write_text(RDP_FILE)
    code = main(["audit", str(folder / "mechs.py"), "--report", str(folder / "rep")])
    return code, folder / "rep"


def test_the_command_line_reports_an_rdp_claim(rdp_report):
    code, rep = rdp_report
    assert code == 1                                     # one violation among the two
    entries = {e["mechanism"]: e for e in json.loads((rep / "result.json").read_text())["results"]}
    assert {e["kind"] for e in entries.values()} == {"rdp"}
    assert entries["gauss_bad"]["verdict"] == "violation"
    assert entries["gauss_ok"]["verdict"] == "pass"
    assert 1.0 < entries["gauss_bad"]["rho_lower_bound"] <= 4.0
    for name in entries:
        assert (rep / name / "renyi_box.png").stat().st_size > 10_000
    page = (rep / "index.html").read_text()
    assert "(α=2, ρ=1)-RDP" in page and "D_α ≥" in page
    assert page.count("data:image/png") == 2                 # each picture, on the page itself
    markdown = (rep / "report.md").read_text()
    assert "gauss_bad/renyi_box.png" in markdown and "gauss_ok/renyi_box.png" in markdown


def test_the_rdp_picture_draws_the_box_outside_the_claim_only_for_a_violation(rdp_report):
    """From what the picture drew: a violation's box (every point of it, on a grid) lies where
    the two-cell divergence (tests/drawn_pictures.py, apart from the package) exceeds ρ, in
    red; a pass's box reaches the claim's band, in blue."""
    _, rep = rdp_report
    figures = json.loads((rep / "figures.json").read_text())
    for name, violation in (("gauss_bad", True), ("gauss_ok", False)):
        record = figures[name]["pictures"]["renyi_box.png"][0]
        assert record["coords"] == "qp_renyi" and (record["alpha"], record["rho"]) == (2.0, 1.0)
        witness = [e for e in record["elements"] if e["role"] == "witness"][0]
        assert witness["red"] is violation
        qs, ps = zip(*witness["points"])
        grid = [_two_cell_renyi(p, q, 2.0) for q in np.linspace(min(qs), max(qs), 9)
                for p in np.linspace(min(ps), max(ps), 9)]
        assert (min(grid) > 1.0) is violation


def test_every_result_names_its_kind_and_older_entries_are_told_apart_by_their_claim():
    from mechanisms_under_test import ZOO

    @dpverify.mechanism(rdp=(2.0, 1.0), pairs=[(0.0, 1.0)])
    def rdp(data, rng, size):
        return data + rng.normal(0.0, 1.0, size)

    @dpverify.mechanism(gdp=1.0, pairs=[(0.0, 1.0)])
    def gdp(data, rng, size):
        return data + rng.normal(0.0, 1.0, size)

    results = {"epsilon_delta": dpverify.audit(ZOO["laplace"], samples=1 << 12),
               "zcdp": dpverify.audit(ZOO["gaussian"], zcdp=0.5, samples=1 << 12),
               "rdp": dpverify.audit(rdp, samples=1 << 12),
               "curve": dpverify.audit(gdp, samples=1 << 12)}
    for kind, result in results.items():
        entry = result.as_dict()
        assert result.kind == entry["kind"] == entry_kind(entry) == kind
        older = {k: v for k, v in entry.items() if k != "kind"}
        assert entry_kind(older) == kind


def test_a_failed_rdp_test_says_what_was_claimed_and_certified_and_a_notebook_draws_it():
    from dpverify.interfaces.pytest_plugin import violation_report

    @dpverify.mechanism(rdp=(2.0, 1.0), pairs=[(0.0, 1.0)])
    def gauss_bad(data, rng, size):
        return data + rng.normal(0.0, 0.5, size)

    result = dpverify.audit(gauss_bad, samples=1 << 16)
    assert result.verdict == "violation"
    text = violation_report(result, "dpverify audit …")
    assert "claimed  (α=2, ρ=1)-RDP" in text and "certified D_α ≥" in text
    assert "data:image/png" in result._repr_html_()


def test_a_reports_links_resolve_in_its_folder_and_its_html_keeps_paths_whole(tmp_path):
    """Every local link of report.md (the docs' pages it cites, its pictures) resolves from
    the report's folder, wherever it is opened; index.html's summary never breaks a path or a
    link (a word with a hyphen or slash) across lines."""
    import re
    from dpverify.interfaces.report import write_report
    from mechanisms_under_test.basic import make_laplace
    result = dpverify.audit(make_laplace(1.0), samples=1 << 14, curves=True, progress=False)
    write_report(tmp_path, {"results": [result.as_dict()], "meta": {}}, [result])
    text = (tmp_path / "report.md").read_text()
    targets = [t for t in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in t]
    assert any("docs/method.md#" in t for t in targets)
    for target in targets:
        assert (tmp_path / target.split("#", 1)[0]).is_file(), target
    page = (tmp_path / "index.html").read_text()
    summary = page[page.index("<pre>"):page.index("</pre>")]
    assert "docs/method.md#" in summary
    for word in re.findall(r"\S*docs/method\.md#\S*", re.sub(r"<span class=w>|</span>", " ",
                                                               summary)):
        assert f"<span class=w>{word}</span>" in summary, word
