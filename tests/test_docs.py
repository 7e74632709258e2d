"""The documentation holds together: the README stays short and keeps its set-up commands, every
`theory.md §N` the code cites is a section of docs/theory.md, and every link or section name the
code and the docs point at exists.

Cheap: reads files only, runs no audit. The files are scanned as they are when the test runs, so
a citation that moves to another module is still checked.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
THEORY = DOCS / "theory.md"

README_MAX_LINES = 150
INSTALL_AND_AUDIT = ("python -m pip install -e . && dpverify audit "
                     "mechanisms_under_test/noisy_max.py mechanisms_under_test/histogram.py")
INSTALL_AND_TEST = "python -m pip install -e '.[test]' && python -m pytest"

# Where the code and the docs cite the theory and the docs.
CODE_DIRS = ("dpverify", "mechanisms_under_test", "scripts", "tests")

# "theory.md §2", "docs/theory.md §8", "theory.md` §7", "theory.md §1, §3", "theory.md §3-4"
THEORY_CITATION = re.compile(
    r"theory\.md`?\]?\s*((?:§\s*\d+(?:\.\d+)*(?:\s*[-–]\s*§?\s*\d+(?:\.\d+)*)?"
    r"(?:\s*(?:,|and)\s*(?=§))?)+)")
SECTION_NUMBER = re.compile(r"\d+(?:\.\d+)*")
# "docs/method.md#ratio-test-certificate" in code or prose
DOC_ANCHOR = re.compile(r"\bdocs/([A-Za-z0-9_-]+\.md)#([A-Za-z0-9_-]+)")
# 'docs/method.md, "The preflight"' or '`docs/method.md`, "Reproducibility"'
DOC_SECTION_NAME = re.compile(r"\bdocs/([A-Za-z0-9_-]+\.md)`?,\s*\"([^\"]+)\"")
# [text](target) and ![alt](target), with an optional "title"
MARKDOWN_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
THEORY_HEADING_NUMBER = re.compile(r"^§?\s*(\d+(?:\.\d+)*)\.?(?:\s|$)")

# `stats.cp_lower`, `dpverify.pairs.search(...)`, `result.verdict`: code names the docs mention.
CODE_NAME = re.compile(r"`((?:dpverify\.)?[a-z_]+(?:\.[A-Za-z_][A-Za-z0-9_]*)+)(?:\([^`]*\))?`")
FILE_SUFFIXES = {"md", "json", "png", "html", "py", "yml", "yaml", "txt", "xml", "csv"}
# ...and the only other heads a dotted name in the docs may have (not dpverify's, not checked)
EXTERNAL_HEADS = {"numpy", "np", "os", "random", "math", "scipy", "opendp", "dp", "diffprivlib",
                  "pydp", "pipeline_dp", "tmlt", "meas", "mech"}

# `dpverify/sampling/`, `tests/test_engine.py`, `reports/examples/*/index.html`: project paths.
PROJECT_PATH = re.compile(
    r"`((?:dpverify|docs|mechanisms_under_test|reports|scripts|tests)/[^`\s]*)`")


# ---------------------------------------------------------------------------------------------
# Reading markdown
# ---------------------------------------------------------------------------------------------

def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of a markdown text, without fenced code blocks."""
    lines, fence = [], None
    for number, line in enumerate(text.splitlines(), start=1):
        marker = re.match(r"^\s*(```|~~~)", line)
        if marker:
            if fence is None:
                fence = marker.group(1)
            elif marker.group(1) == fence:
                fence = None
            continue
        if fence is None:
            lines.append((number, line))
    return lines


def headings(path: Path) -> list[str]:
    """The heading texts of a markdown file, in order, as written (code blocks skipped)."""
    found = []
    for _, line in prose_lines(path.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if match:
            found.append(match.group(2))
    return found


def plain(heading: str) -> str:
    """A heading as rendered text: links reduced to their text, emphasis and code marks dropped."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    return re.sub(r"[`*]", "", text).strip()


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation removed, spaces to hyphens."""
    text = plain(heading).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor GitHub gives the headings of `path` (repeats get -1, -2, ...)."""
    seen: dict[str, int] = {}
    result = set()
    for heading in headings(path):
        base = slug(heading)
        count = seen.get(base, 0)
        result.add(base if count == 0 else f"{base}-{count}")
        seen[base] = count + 1
    return result


def theory_sections(path: Path = THEORY) -> set[str]:
    """Section numbers of the theory headings: '## 2. Title' → '2', '### 2.3 Title' → '2.3'."""
    numbers = set()
    for heading in headings(path):
        match = THEORY_HEADING_NUMBER.match(plain(heading))
        if match:
            numbers.add(match.group(1))
    return numbers


# ---------------------------------------------------------------------------------------------
# Finding citations
# ---------------------------------------------------------------------------------------------

def scanned_files() -> list[Path]:
    """Python sources of the project (this file excepted), the README and every docs page."""
    files = [README, *sorted(DOCS.glob("*.md"))]
    for directory in CODE_DIRS:
        files += sorted(p for p in (ROOT / directory).rglob("*.py")
                        if p.resolve() != Path(__file__).resolve())
    return files


def cited_sections(text: str) -> list[tuple[int, str]]:
    """(line, section number) of every `theory.md §N` citation in `text`; lists and ranges
    ('§1, §3', '§3-4') give each number they name."""
    cited = []
    for match in THEORY_CITATION.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        for number in SECTION_NUMBER.findall(match.group(1)):
            cited.append((line, number))
    return cited


def internal_sections(text: str) -> list[tuple[int, str]]:
    """(line, number) of every bare '§N' in docs/theory.md itself (its cross-references)."""
    found = []
    for line, content in prose_lines(text):
        for match in re.finditer(r"§\s*(\d+(?:\.\d+)*)", content):
            found.append((line, match.group(1)))
    return found


def shown(path: Path) -> str:
    """`path` relative to the project when it lies inside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def missing_theory_sections(files, sections) -> list[str]:
    """'file:line: §N' for every citation of a section that docs/theory.md lacks."""
    missing = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        cited = cited_sections(text)
        if path.resolve() == THEORY.resolve():
            cited += internal_sections(text)
        for line, number in cited:
            if number not in sections:
                missing.append(f"{shown(path)}:{line}: theory.md §{number}")
    return missing


def broken_doc_references(files) -> list[str]:
    """'file:line: ...' for every docs/X.md#anchor or docs/X.md, "Section" that does not resolve."""
    broken = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        for match in DOC_ANCHOR.finditer(text):
            target = DOCS / match.group(1)
            line = text.count("\n", 0, match.start()) + 1
            if not target.is_file() or match.group(2) not in anchors(target):
                broken.append(f"{shown(path)}:{line}: {match.group(0)}")
        for match in DOC_SECTION_NAME.finditer(text):
            target = DOCS / match.group(1)
            wanted = " ".join(match.group(2).split()).lower()
            titles = [plain(h).lower() for h in headings(target)] if target.is_file() else []
            line = text.count("\n", 0, match.start()) + 1
            if wanted not in titles:
                broken.append(f"{shown(path)}:{line}: docs/{match.group(1)}, "
                              f"\"{match.group(2)}\"")
    return broken


def broken_links(path: Path) -> list[str]:
    """Relative links of a markdown file whose file (or heading anchor) does not exist."""
    broken = []
    for line, content in prose_lines(path.read_text(encoding="utf-8")):
        content = re.sub(r"`[^`]*`", "", content)  # inline code is not a link
        for match in MARKDOWN_LINK.finditer(content):
            target = match.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            linked = (path.parent / file_part).resolve() if file_part else path
            where = f"{shown(path)}:{line}: ({target})"
            if not linked.exists():
                broken.append(where)
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                broken.append(where + " has no such heading")
    return broken


# ---------------------------------------------------------------------------------------------
# Checking code names, paths and formulas
# ---------------------------------------------------------------------------------------------

def dpverify_modules() -> set[str]:
    """Names of dpverify's modules and subpackages ('stats', 'sampling', ...)."""
    import pkgutil

    import dpverify
    return {info.name for info in pkgutil.iter_modules(dpverify.__path__)}


def resolves(dotted: str) -> bool:
    """Whether `dpverify.<dotted>` (or `dotted` when it starts with dpverify) is importable or
    an attribute of something importable."""
    import importlib
    parts = dotted.split(".")
    if parts[0] != "dpverify":
        parts = ["dpverify", *parts]
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(obj, name):
                return False
            obj = getattr(obj, name)
        return True
    return False


def result_attributes() -> dict[str, set[str]]:
    """Attributes a doc may name on `result.` and `witness.`: dataclass fields and members."""
    import dataclasses

    from dpverify.fdp import CurveAuditResult
    from dpverify.rdp import RenyiAuditResult
    from dpverify.result import AuditResult, Witness
    from dpverify.zcdp import ZcdpAuditResult

    def names(*classes):
        return set().union(*({f.name for f in dataclasses.fields(c)} | set(dir(c))
                             for c in classes))
    return {"result": names(AuditResult, ZcdpAuditResult, RenyiAuditResult, CurveAuditResult),
            "witness": names(Witness)}


def unknown_code_names(pages) -> list[str]:
    """'page: name' for every code name in `pages` that names nothing in dpverify."""
    modules, attributes = dpverify_modules(), result_attributes()
    unknown = []
    for page in pages:
        for _, content in prose_lines(page.read_text(encoding="utf-8")):
            for match in CODE_NAME.finditer(content):
                head, _, rest = match.group(1).partition(".")
                if rest.rsplit(".", 1)[-1] in FILE_SUFFIXES:
                    continue  # report.md, result.json, witness.png: files, not code
                if head in EXTERNAL_HEADS:
                    continue  # numpy.random.Generator, meas.map, os._exit: not ours
                if head in attributes:
                    known = rest.split(".")[0] in attributes[head]
                else:  # a module of dpverify, or one that no longer exists (`engine.audit`)
                    known = (head == "dpverify" or head in modules) and resolves(match.group(1))
                if not known:
                    unknown.append(f"{shown(page)}: {match.group(1)}")
    return unknown


def missing_paths(pages) -> list[str]:
    """'page: path' for every project path named in `pages` that matches no file or folder."""
    missing = []
    for page in pages:
        for _, content in prose_lines(page.read_text(encoding="utf-8")):
            for match in PROJECT_PATH.finditer(content):
                if not any(ROOT.glob(match.group(1).rstrip("/"))):
                    missing.append(f"{shown(page)}: {match.group(1)}")
    return missing


def section_text(number: str) -> str:
    """The text of docs/theory.md section `number`, with its subsections."""
    text, keep, level = [], False, 0
    for _, line in prose_lines(THEORY.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if match:
            heading_number = THEORY_HEADING_NUMBER.match(plain(match.group(2)))
            depth = len(match.group(1))
            if keep and depth <= level:
                break
            if heading_number and heading_number.group(1) == number:
                keep, level = True, depth
        if keep:
            text.append(line)
    return "\n".join(text)


# ---------------------------------------------------------------------------------------------
# The tests
# ---------------------------------------------------------------------------------------------

def test_readme_is_short():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


@pytest.mark.parametrize("command", [INSTALL_AND_AUDIT, INSTALL_AND_TEST])
def test_readme_has_the_set_up_commands(command):
    assert command in README.read_text(encoding="utf-8")


def test_ci_runs_the_readme_test_command():
    ci = ROOT / ".ci" / "run"
    if not ci.is_file():
        pytest.skip("no .ci/run in this checkout")
    assert INSTALL_AND_TEST in ci.read_text(encoding="utf-8")


def test_theory_has_numbered_sections():
    sections = theory_sections()
    assert {str(n) for n in range(1, 9)} <= sections, sorted(sections)


def test_every_theory_citation_resolves():
    missing = missing_theory_sections(scanned_files(), theory_sections())
    assert not missing, "cited sections missing from docs/theory.md:\n" + "\n".join(missing)


def test_every_doc_anchor_and_section_name_resolves():
    broken = broken_doc_references(scanned_files())
    assert not broken, "references to docs/ that do not resolve:\n" + "\n".join(broken)


@pytest.mark.parametrize("page", [README, *sorted(DOCS.glob("*.md"))], ids=lambda p: p.name)
def test_relative_links_exist(page):
    broken = broken_links(page)
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_code_names_in_docs_exist():
    unknown = unknown_code_names([README, *sorted(DOCS.glob("*.md"))])
    assert not unknown, "the docs name code that does not exist:\n" + "\n".join(unknown)


def test_paths_in_docs_exist():
    missing = missing_paths([README, *sorted(DOCS.glob("*.md"))])
    assert not missing, "the docs name paths that do not exist:\n" + "\n".join(missing)


# Each cited section states the formula the code cites it for (one telling fragment each).
FORMULAS = [
    ("1", "ln((P(S) − δ)/Q(S))"),                   # stats.py: one event proves ε ≥ …
    ("1", "e^{−ε}(1 − δ − α)"),                      # region.py: the trade-off function
    ("1", "ln((α−1)/α) − (ln δ + ln α)/(α−1)"),      # renyi.balle_epsilon
    ("1", "k·e^{(k−1)ε}·δ"),                         # compose.py: group privacy
    ("2", "ln((p_L − δ)/q_U)"),                      # stats.epsilon_bound
    ("2", "p_L − e^ε q_U"),                          # stats.delta_bound
    ("2", "ln(π_L/(1 − π_L))"),                      # stats.ratio_epsilon_bound
    ("2", "Fieller"),                                # stats.coupled_epsilon_bound
    ("2", "P(sup_t W_t ≥ 1/α_bet) ≤ α_bet"),             # certify.betting (Ville)
    ("2", "max(2·ε₀, ε₀ + 0.1)"),                    # result.gross_violation
    ("2", "m = min(p̂, 1 − q̂)"),                     # certify.resolution
    ("3", "1 − e^{(ε−ε₀)/2}"),                       # basic.make_laplace
    ("3", "Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ)"),       # basic.gaussian_delta
    ("3", "(e^{ε₀} − e^ε)₊/(e^{ε₀} + k − 1)"),       # basic.make_randomized_response
    ("4", "(1 + 6c)ε/4"),                            # svt.make_svt4
    ("4", "nε/2"),                                   # noisy_max.make_rnm3
    ("4", "ln(1 + 2^{−k})"),                         # dpsniper.make_truncated_geometric
    ("5", "half-half"),                              # pairs.py: StatDP's patterns
    ("6", "trailing"),                               # attacks: float bit patterns
    ("7", "output_measure"),                         # libraries: claims read from OpenDP
    ("8", "ρ + 2√(ρ·ln(1/δ))"),                      # zcdp.implied_epsilon
    ("8", "[p_L, 1] × [0, q_U]"),                    # zcdp: the box's corner
]


@pytest.mark.parametrize("number, formula", FORMULAS)
def test_cited_section_states_its_formula(number, formula):
    assert formula in section_text(number), f"theory.md §{number} lacks {formula!r}"


# The checks themselves can fail.

def test_checker_reports_a_missing_section(tmp_path):
    source = tmp_path / "module.py"
    source.write_text('"""See theory.md §2 and theory.md §1, §99 (docs/theory.md §3-4)."""\n',
                      encoding="utf-8")
    assert [n for _, n in cited_sections(source.read_text(encoding="utf-8"))] == \
        ["2", "1", "99", "3", "4"]
    missing = missing_theory_sections([source], theory_sections())
    assert len(missing) == 1 and missing[0].endswith("module.py:1: theory.md §99")


def test_checker_reports_broken_anchors_and_links(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[ok](#title) [no](#nowhere) [gone](missing.md) `[x](code.md)`\n"
                    "```\n[in code](missing_too.md)\n```\n", encoding="utf-8")
    assert anchors(page) == {"title"}
    assert [b.rsplit(" (", 1)[-1] for b in broken_links(page)] == \
        ["#nowhere) has no such heading", "missing.md)"]
    source = tmp_path / "module.py"
    source.write_text('# docs/method.md#no-such-anchor and docs/method.md, "No such section"\n',
                      encoding="utf-8")
    assert len(broken_doc_references([source])) == 2


def test_checker_reports_unknown_code_and_paths(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("`stats.cp_lower` `stats.no_such_bound` `result.verdict` `result.no_field`\n"
                    "`numpy.random.Generator` `tests/test_docs.py` `dpverify/no_such_module.py`\n"
                    "`no_such_module.audit` `report.md`\n", encoding="utf-8")
    assert [u.rsplit(" ", 1)[-1] for u in unknown_code_names([page])] == \
        ["stats.no_such_bound", "result.no_field", "no_such_module.audit"]
    assert [m.rsplit(" ", 1)[-1] for m in missing_paths([page])] == ["dpverify/no_such_module.py"]


@pytest.mark.parametrize("heading, expected", [
    ("8. Zero-concentrated DP (zCDP)", "8-zero-concentrated-dp-zcdp"),
    ("Ratio-test certificate", "ratio-test-certificate"),
    ("Evidence in the mechanism's terms", "evidence-in-the-mechanisms-terms"),
    ("2.3 The conditional ratio test", "23-the-conditional-ratio-test"),
    ("`--measure` and *time* budgets", "--measure-and-time-budgets"),
])
def test_slug_is_githubs(heading, expected):
    assert slug(heading) == expected


# a figure: an integer (with thousands commas) or a decimal, not part of a word, a power (2^27,
# 10⁴) or a path
FIGURE = re.compile(r"(?<![\w.^/⁻])\d+(?:,\d{3})*(?:\.\d+)?(?![\d^⁰¹²³⁴⁵⁶⁷⁸⁹])")
REPORT_LINK = re.compile(r"\]\(((?:\.\./)?reports/[\w/]+\.md)\)")


def _plain_figure(token: str) -> str:
    """22,595 → 22595 and 1.810 → 1.81: one figure however it is written."""
    token = token.replace(",", "")
    return token.rstrip("0").rstrip(".") if "." in token else token


def figures_in(text: str, as_percent: bool = False) -> set[str]:
    """Every figure of a text (`_plain_figure`); with `as_percent`, each fraction below 1 also
    as the percentages it rounds to (0.0257 is quoted as 2.57%, 2.6% or 3%)."""
    figures = {_plain_figure(m) for m in FIGURE.findall(text)}
    if not as_percent:
        return figures
    for f in [float(x) for x in figures if "." in x and float(x) < 1]:
        figures |= {_plain_figure(f"{100 * f:.{d}f}") for d in (0, 1, 2)}
    return figures


def quoted_figures(page: Path) -> list[tuple[str, set[str], list[Path]]]:
    """The rows of a page's tables that quote a report: (the row's figure cell, its figures,
    the reports it links). The figure cell is the last one that is not a link."""
    out = []
    for line in page.read_text(encoding="utf-8").splitlines():
        links = REPORT_LINK.findall(line)
        if not (line.startswith("|") and links):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        cell = [c for c in cells if not REPORT_LINK.search(c) and not c.startswith("`python")][-1]
        out.append((cell, figures_in(cell), [(page.parent / link).resolve() for link in links]))
    return out


@pytest.mark.parametrize("page", [README, ROOT / "docs" / "results.md"], ids=lambda p: p.name)
def test_every_figure_quoted_beside_a_report_is_in_that_report(page):
    """Each figure in a table row that links a report (README's headline figures, results.md's
    list of reports) must appear in the report it links: no figure from another run."""
    rows = quoted_figures(page)
    assert len(rows) >= 8
    wrong = []
    for cell, figures, reports in rows:
        text = " ".join(r.read_text(encoding="utf-8") for r in reports)
        missing = sorted(figures - figures_in(text, as_percent=True))
        if missing:
            wrong.append(f"{[r.name for r in reports]}: {missing} in {cell[:80]!r}")
    assert not wrong, "\n".join(wrong)


def test_the_figure_check_sees_a_figure_the_report_does_not_hold(tmp_path):
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "x.md").write_text("22,595 runs; 1.5× the oracle")
    page = tmp_path / "page.md"
    page.write_text("| a | RNM3 22595 (1.5×), SVT3 875,811 | [x](reports/x.md) |\n")
    [(cell, figures, reports)] = quoted_figures(page)
    assert figures == {"22595", "1.5", "875811"} and reports[0].name == "x.md"  # not SVT3's 3
    assert figures - figures_in(reports[0].read_text()) == {"875811"}


def test_every_script_writes_a_report_the_readme_links():
    """scripts/ holds report scripts only (helpers start with _): each is listed in
    docs/results.md with the report it writes, and the README links that report."""
    readme = README.read_text(encoding="utf-8")
    listed = {}
    for line in (DOCS / "results.md").read_text(encoding="utf-8").splitlines():
        script = re.search(r"`python scripts/(\w+)\.py", line)
        report = re.search(r"reports/([\w/]+?)(?:\.md|/\*/index\.html|/)", line)
        if line.startswith("|") and script and report:
            listed[script.group(1)] = report.group(1)
    scripts = sorted(p.stem for p in (ROOT / "scripts").glob("*.py") if not p.stem.startswith("_"))
    assert sorted(listed) == scripts
    unlinked = [f"{s}: reports/{r}" for s, r in listed.items() if f"reports/{r}" not in readme]
    assert not unlinked, unlinked
