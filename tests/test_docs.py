"""The documentation runs as written.

Every ```python block of README.md and docs/*.md is executed, the blocks of one page in order in
one namespace (a page reads like one session). A ```text block that directly follows a python
block is that block's output: what it prints must equal it. Shell commands and other output use
other fence languages and are not run. Also: the README starts with its two commands, its links
resolve, the figures of its benchmark summary come from benchmarks/results/*.md, and
docs/coverage.md is what ``python -m chainrules coverage`` generates now.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import linecache
import os
import pathlib
import re
import subprocess
import sys
import types

import pytest

from chainrules.testing import zoo

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
RESULTS = ROOT / "benchmarks" / "results"

_FENCE = re.compile(r"^```(\S*)\s*$")


@dataclasses.dataclass
class Block:
    language: str
    line: int  # 1-based line of the first line of code
    code: str
    output: str | None = None  # the text block right after it, if any


def blocks(text: str) -> list[Block]:
    """The fenced blocks of a markdown page, each python block with the text block that follows it."""
    found: list[Block] = []
    lines = text.splitlines()
    i = 0
    last_end = -2
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start = i + 1
        end = start
        while end < len(lines) and lines[end].rstrip() != "```":
            end += 1
        if end == len(lines):
            raise ValueError(f"line {i + 1}: the code block is never closed")
        block = Block(m.group(1), start + 1, "\n".join(lines[start:end]) + "\n")
        follows = all(not line.strip() for line in lines[last_end + 1 : i])
        if block.language == "text" and follows and found and found[-1].language == "python":
            found[-1].output = block.code
        else:
            found.append(block)
        last_end = end
        i = end + 1
    return found


def test_blocks_pairs_python_with_its_output():
    page = "```python\nprint(1)\n```\n\n```text\n1\n```\n\nprose\n\n```text\nnot output\n```\n"
    found = blocks(page)
    assert [(b.language, b.line, b.output) for b in found] == [("python", 2, "1\n"), ("text", 12, None)]


def python_view(text: str, page_blocks: list[Block]) -> list[str]:
    """The page's lines with everything outside its python blocks blanked: a Python file whose
    line numbers are the page's."""
    lines = [""] * len(text.splitlines())
    for block in page_blocks:
        if block.language == "python":
            code = block.code.splitlines()
            lines[block.line - 1 : block.line - 1 + len(code)] = code
    return [line + "\n" for line in lines]


def test_python_view_keeps_the_page_line_numbers():
    page = "# Title\n\n```python\nx = 1\n```\n\n```text\n1\n```\n\n```python\ny = 2\n```\n"
    view = python_view(page, blocks(page))
    assert view[3] == "x = 1\n" and view[11] == "y = 2\n"
    assert "".join(view).strip().splitlines() == ["x = 1", "", "", "", "", "", "", "", "y = 2"]


def run_page(path: pathlib.Path) -> None:
    # a module of its own, as a script would be (dataclasses look their module up)
    module = types.ModuleType(f"docs_{path.stem}")
    module.__file__ = filename = str(path)
    sys.modules[module.__name__] = module
    zoo_cases = dict(zoo.CASES)  # a page may add zoo cases; other tests must not see them
    text = path.read_text()
    page_blocks = blocks(text)
    # Tracebacks and the source engine read the page's code through linecache, as they would
    # read a script; without a modification time the entry is never reloaded from the disk.
    view = python_view(text, page_blocks)
    linecache.cache[filename] = (sum(map(len, view)), None, view, filename)
    try:
        for block in page_blocks:
            if block.language != "python":
                continue
            # padded so that line numbers are the page's own
            code = compile("\n" * (block.line - 1) + block.code, filename, "exec")
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(code, module.__dict__)
            if block.output is not None:
                got = out.getvalue().rstrip()
                want = block.output.rstrip()
                assert got == want, f"{path.name}:{block.line}: the block printed\n{got}\nbut the page shows\n{want}"
    finally:
        linecache.cache.pop(filename, None)
        del sys.modules[module.__name__]
        zoo.CASES.clear()
        zoo.CASES.update(zoo_cases)


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_page_runs_as_written(path):
    run_page(path)


def test_every_page_has_code():
    assert len(PAGES) >= 6  # README and the five pages of docs/
    for path in PAGES:
        if path.name != "coverage.md":
            assert any(b.language == "python" for b in blocks(path.read_text())), path


def test_readme_starts_with_the_two_commands():
    lines = README.read_text().splitlines()
    first_block = lines.index("```bash")
    assert all(line.startswith("#") or not line.strip() for line in lines[:first_block])
    assert lines[first_block + 1 : first_block + 4] == [
        "make demo    # sets up .venv and runs the tour",
        "make test    # sets up .venv and runs the tests",
        "```",
    ]


_LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")
_CODE_SPAN = re.compile(r"`[^`\n]*`")


def prose(text: str) -> str:
    """The page without its code blocks and code spans."""
    outside_blocks = re.split(r"^```.*$", text, flags=re.M)[::2]
    return _CODE_SPAN.sub("", "".join(outside_blocks))


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(path):
    for target, _ in _LINK.findall(prose(path.read_text())):
        if "://" in target or target.startswith("mailto:"):
            continue
        assert (path.parent / target).exists(), f"{path.name} links to {target}, which does not exist"


_FIGURE = re.compile(r"\b\d+(?:\.\d+)?[x×]")


def test_benchmark_figures_in_the_readme_come_from_the_results():
    text = README.read_text()
    summary = text.split("\n## Benchmarks", 1)[1].split("\n## ", 1)[0]
    results = "\n".join(p.read_text() for p in sorted(RESULTS.glob("*.md")))
    figures = _FIGURE.findall(summary)
    assert figures, "the README's benchmark summary quotes no figures"
    missing = [f for f in figures if f not in results]
    assert not missing, f"README figures not found in benchmarks/results/*.md: {missing}"


def test_coverage_page_is_up_to_date():
    # a fresh process: rules registered by other tests must not appear in the page
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    generated = subprocess.run(
        [sys.executable, "-m", "chainrules", "coverage"], capture_output=True, text=True, env=env, cwd=ROOT, check=True
    ).stdout
    committed = (ROOT / "docs" / "coverage.md").read_text()
    assert generated == committed, (
        "docs/coverage.md is out of date with the registered rules; regenerate it with "
        "`python -m chainrules coverage docs/coverage.md`"
    )


def test_coverage_lists_the_registered_rules():
    from chainrules.__main__ import coverage_markdown
    from chainrules.rules import list_rules

    text = coverage_markdown()
    for name, has_rrule, has_frule in list_rules():
        assert f"| `{name}` | {'yes' if has_rrule else 'no'} | {'yes' if has_frule else 'no'} |" in text


def test_coverage_command_writes_the_page_to_a_path(tmp_path, capsys):
    from chainrules.__main__ import coverage_markdown, main

    assert main(["chainrules", "coverage", str(tmp_path / "coverage.md")]) == 0
    assert (tmp_path / "coverage.md").read_text() == coverage_markdown()
    assert main(["chainrules", "coverage", "a", "b"]) == 2
    assert "python -m chainrules coverage [PATH]" in capsys.readouterr().out
