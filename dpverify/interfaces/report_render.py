"""report.md and index.html from the same blocks (report_content.py): each renderer only lays
out, so the two files say the same thing in the same words."""
from __future__ import annotations

import base64
import html as _html
import os
import re
from pathlib import Path

from .report_content import Aside, Code, Link, Strong

CSS = """body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1100px;margin:2em auto;
padding:0 1em;color:#222}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;
padding:4px 8px;text-align:left;font-size:14px}th{background:#f3f3f3}.violation{color:#b71c1c;
font-weight:bold}.pass{color:#1b5e20;font-weight:bold}.inconclusive{color:#b26a00;
font-weight:bold}.note{background:#fffbe6;border:1px solid #e6d58a;padding:.6em 1em}
img{max-width:49%;border:1px solid #ddd;margin:2px;vertical-align:top}th{white-space:nowrap}img.first{max-width:100%}
code{background:#f4f4f4;padding:1px 4px}pre{white-space:pre-wrap}.w{white-space:nowrap}"""


def inline_md(x) -> str:
    if isinstance(x, list):
        return "".join(inline_md(v) for v in x)
    if isinstance(x, Code):
        return f"`{x.text}`"
    if isinstance(x, Strong):
        return f"**{x.text}**"
    if isinstance(x, Link):  # its href as `to_markdown` resolved it from the report
        return f"{x.text} ([how]({x.href}))"
    if isinstance(x, Aside):
        return f" ({x.text})"
    return str(x)


def _cell_md(x) -> str:
    return inline_md(x).replace("|", "\\|").replace("\n", " ")


def to_markdown(blocks: list, directory: Path) -> str:
    """report.md: images linked by their path relative to the report's directory, and the
    docs' pages where they can be reached from it (`_docs_href`), else named."""
    return _markdown_lines(_resolve_links(blocks, directory), directory)


def _resolve_links(x, directory: Path):
    """The blocks with each Link's href as seen from `directory`, or its words and the page's
    name where the page cannot be reached."""
    if isinstance(x, Link):
        href = _docs_href(x.href, directory)
        return Link(x.text, href) if href else f"{x.text} ({x.href} in dpverify)"
    if isinstance(x, (list, tuple)):
        return type(x)(_resolve_links(v, directory) for v in x)
    return x


_CHECKOUT = Path(__file__).resolve().parents[2]  # where docs/ is, when dpverify runs from one


def copy_docs(blocks: list, directory: Path) -> None:
    """Copy the docs' pages the blocks link to (docs/*.md, from the checkout dpverify runs
    from) into `directory`/docs, so that report.md's links resolve wherever the report is
    opened; a report inside the checkout links to its docs instead, and without them report.md
    names the pages."""
    import shutil
    if _inside_checkout(directory):
        return
    for page in sorted({x.href.split("#", 1)[0] for x in _links(blocks)}):
        if page.startswith("docs/") and (_CHECKOUT / page).is_file():
            (directory / page).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(_CHECKOUT / page, directory / page)


def _inside_checkout(directory: Path) -> bool:
    return (_CHECKOUT / "docs").is_dir() and Path(directory).resolve().is_relative_to(_CHECKOUT)


def _docs_href(href: str, directory: Path) -> str | None:
    """`href` (a docs page, with an anchor) as report.md links it from `directory`: a path to
    the checkout's page for a report inside it, the copied page's, or None."""
    page, _, anchor = href.partition("#")
    if _inside_checkout(directory) and (_CHECKOUT / page).is_file():
        rel = os.path.relpath(_CHECKOUT / page, Path(directory).resolve())
        return Path(rel).as_posix() + (f"#{anchor}" if anchor else "")
    return href if (Path(directory) / page).is_file() else None


def _links(x):
    if isinstance(x, Link):
        yield x
    elif isinstance(x, (list, tuple)):
        for v in x:
            yield from _links(v)


def _markdown_lines(blocks: list, directory: Path) -> str:
    lines = []
    for block in blocks:
        kind = block[0]
        if kind == "title":
            lines += [f"# {block[1]}", ""]
        elif kind in ("note", "text"):
            lines += [inline_md(block[1]), ""]
        elif kind == "section":
            lines += [f"## {block[1]}: {block[2]}", ""]
        elif kind == "table":
            header, rows = block[1], block[2]
            lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            lines += ["| " + " | ".join(_cell_md(c) for c in row) + " |" for row in rows]
            lines.append("")
        elif kind == "bullets":
            lines += [f"- {inline_md(item)}" for item in block[1]] + [""]
        elif kind == "pre":
            lines += ["```", block[1], "```", ""]
        elif kind == "image":
            path = Path(block[1])
            lines += [f"![{path.stem}]({path.relative_to(directory)})", ""]
    return "\n".join(lines).rstrip() + "\n"


def _esc(value) -> str:
    return _html.escape(str(value))


def inline_html(x) -> str:
    if isinstance(x, list):
        return "".join(inline_html(v) for v in x)
    if isinstance(x, Code):
        return f"<code>{_esc(x.text)}</code>"
    if isinstance(x, Strong):
        return f"<b>{_esc(x.text)}</b>"
    if isinstance(x, Link):   # the page is self-contained: the docs are named, not linked
        return _esc(x.text)
    if isinstance(x, Aside):
        return f"<br><small>{_esc(x.text)}</small>"
    return _esc(x)


def _unbroken(text: str) -> str:
    """Escaped text whose words with a hyphen or a slash (a path, a link, a range) are kept on
    one line: the browser would break them there."""
    return re.sub(r"\S*[-/]\S*", lambda m: f"<span class=w>{m.group(0)}</span>", _esc(text))


def _image_html(path: Path, first: bool) -> str:
    data = base64.b64encode(Path(path).read_bytes()).decode()
    cls = ' class="first"' if first else ""
    return f'<img alt="{_esc(Path(path).stem)}"{cls} src="data:image/png;base64,{data}">'


def _table_html(header, rows, verdicts) -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in header) if any(header) else ""
    body = []
    for i, row in enumerate(rows):
        cells = []
        for j, cell in enumerate(row):
            css = f" class={verdicts[i].replace(' ', '-')}" if verdicts and j == 1 else ""
            tag = "th" if not any(header[1:]) and j == 0 else "td"
            cells.append(f"<{tag}{css}>{inline_html(cell)}</{tag}>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return "<table>" + (f"<tr>{head}</tr>" if head else "") + "".join(body) + "</table>"


def to_html(blocks: list) -> str:
    """index.html: one self-contained page, no external links, pictures inlined."""
    parts = ["<!doctype html><html lang=en><head><meta charset=utf-8>",
             "<title>dpverify audit report</title>", f"<style>{CSS}</style></head><body>"]
    for block in blocks:
        kind = block[0]
        if kind == "title":
            parts.append(f"<h1>{_esc(block[1])}</h1>")
        elif kind == "note":
            parts.append(f"<p class=note>{inline_html(block[1])}</p>")
        elif kind == "text":
            parts.append(f"<p>{inline_html(block[1])}</p>")
        elif kind == "section":
            parts.append(f"<h2>{_esc(block[1])}: <span class={block[2].replace(' ', '-')}>"
                         f"{_esc(block[2])}</span></h2>")
        elif kind == "table":
            parts.append(_table_html(*block[1:]))
        elif kind == "bullets":
            parts.append("<ul>" + "".join(f"<li>{inline_html(i)}</li>" for i in block[1])
                         + "</ul>")
        elif kind == "pre":
            parts.append(f"<pre>{_unbroken(block[1])}</pre>")
        elif kind == "image":
            parts.append(_image_html(block[1], block[2]))
    parts.append("</body></html>")
    return "\n".join(parts)


__all__ = ["CSS", "inline_md", "inline_html", "to_markdown", "to_html", "copy_docs"]
