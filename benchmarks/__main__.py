"""``python -m benchmarks`` (or ``make bench``): run every benchmark script, then write benchmarks/results.md.

Each script ``benchmarks/<name>.py`` runs on its own (``python benchmarks/<name>.py``), measures
ratios side by side in one run, and writes ``benchmarks/results/<name>.md`` (and any PNG plots
next to it). This runner runs them one after another in fresh processes, shows progress, and
gathers the tables into one page. ``python -m benchmarks accumulation linalg`` runs a subset.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
RESULTS = HERE / "results"


def scripts(selected: list[str]) -> list[pathlib.Path]:
    found = sorted(p for p in HERE.glob("*.py") if not p.name.startswith("_"))
    if selected:
        unknown = set(selected) - {p.stem for p in found}
        if unknown:
            raise SystemExit(f"unknown benchmark(s): {', '.join(sorted(unknown))}; have {[p.stem for p in found]}")
        found = [p for p in found if p.stem in selected]
    return found


def progress(done: int, total: int, label: str, width: int = 30) -> str:
    filled = int(width * done / total)
    return f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {label}"


def gather(names: list[str]) -> str:
    parts = [
        "# Benchmark results",
        "",
        "Every figure is a median over repeats; every comparison a ratio measured in the same run.",
        "Each section is written by its script in `benchmarks/` (re-run one with `python benchmarks/<name>.py`).",
        "",
    ]
    for name in names:
        table = RESULTS / f"{name}.md"
        if table.exists():
            text = table.read_text().strip()
            # demote the script's own title one level
            parts.append(text.replace("\n# ", "\n## ").replace("# ", "## ", 1) if text.startswith("# ") else text)
            parts.append("")
    return "\n".join(parts)


def main(argv: list[str]) -> int:
    todo = scripts(argv)
    failures = []
    for i, script in enumerate(todo):
        print(progress(i, len(todo), f"running {script.stem} ..."), flush=True)
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
        took = time.perf_counter() - start
        if proc.returncode != 0:
            failures.append(script.stem)
            print(proc.stdout[-2000:], proc.stderr[-4000:], sep="\n")
        print(progress(i + 1, len(todo), f"{script.stem} {'failed' if proc.returncode else 'done'} in {took:.0f} s"))
    names = [p.stem for p in scripts([])]
    (HERE / "results.md").write_text(gather(names))
    print(f"wrote {HERE / 'results.md'}")
    if failures:
        print(f"failed: {', '.join(failures)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
