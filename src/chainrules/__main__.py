"""``python -m chainrules demo`` runs the tour; ``python -m chainrules coverage [PATH]`` writes the rule list."""

from __future__ import annotations

import sys

COVERAGE_COMMAND = "python -m chainrules coverage docs/coverage.md"


def coverage_markdown() -> str:
    """``docs/coverage.md``: every callable with a rule, by module, from ``chainrules.rules.list_rules()``.

    >>> text = coverage_markdown()
    >>> "| `math.sin` | yes | yes |" in text
    True
    """
    from .rules import list_rules

    rules = list_rules()
    groups: dict[str, list[tuple[str, bool, bool]]] = {}
    for name, has_rrule, has_frule in rules:
        groups.setdefault(_module_of(name), []).append((name, has_rrule, has_frule))
    lines = [
        "# Rule coverage",
        "",
        f"Generated from `chainrules.rules.list_rules()` by `{COVERAGE_COMMAND}`; "
        "`tests/test_docs.py` fails when this page is out of date.",
        "",
        f"{len(rules)} callables have rules: "
        f"{sum(r for _, r, _ in rules)} a reverse rule (`rrule`), {sum(f for _, _, f in rules)} a forward rule "
        "(`frule`). Array methods are listed as `numpy.ndarray.<method>` and ufunc methods as "
        "`numpy.add.reduce`, under `numpy`. Python functions need no rule: the engines differentiate what "
        "they do. A library callable that is not listed has none, and an engine that reaches it raises "
        "`chainrules.NoRuleError` naming it and the line of the call.",
        "",
        "| module | callables |",
        "|---|---|",
    ]
    lines += [f"| [`{m}`](#{_anchor(m)}) | {len(entries)} |" for m, entries in groups.items()]
    for module, entries in groups.items():
        lines += ["", f"## {module}", "", "| callable | rrule | frule |", "|---|---|---|"]
        lines += [f"| `{name}` | {_yes(r)} | {_yes(f)} |" for name, r, f in entries]
    return "\n".join(lines) + "\n"


def _module_of(name: str) -> str:
    """The longest dotted prefix of ``name`` that is a module: ``numpy.linalg`` for ``numpy.linalg.norm``,
    ``numpy`` for ``numpy.ndarray.sum`` and ``numpy.add.reduce``."""
    parts = name.split(".")
    for end in range(len(parts) - 1, 0, -1):
        prefix = ".".join(parts[:end])
        if prefix in sys.modules:
            return prefix
    return parts[0] if len(parts) > 1 else "(other)"


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _anchor(heading: str) -> str:
    return "".join(c for c in heading.lower().replace(" ", "-") if c.isalnum() or c in "-_")


def main(argv: list[str]) -> int:
    if argv[1:2] == ["demo"]:
        from .demo import main as demo

        demo()
        return 0
    if argv[1:2] == ["coverage"] and len(argv) <= 3:
        text = coverage_markdown()
        if len(argv) == 3:
            with open(argv[2], "w", encoding="utf-8") as out:
                out.write(text)
        else:
            sys.stdout.write(text)
        return 0
    print("usage: python -m chainrules demo | python -m chainrules coverage [PATH]")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
