"""Rule lookup on the hot path: nanoseconds per ``rrule.lookup`` for a registered and an unregistered callable.

Run: ``python benchmarks/registry_lookup.py`` (writes benchmarks/results/registry_lookup.md).
"""

from __future__ import annotations

import math
import operator
import pathlib
import platform
import statistics
import timeit
from dataclasses import dataclass

import numpy as np

import chainrules as cr


def unregistered(x):
    return x


@dataclass
class Model:  # an unhashable callable instance, looked up by its class
    k: float

    def __call__(self, x):
        return self.k * x


@cr.rrule.register(Model)
def rrule_model(m, x):
    return m(x), lambda dy: (cr.Tangent[Model](k=dy * x), dy * m.k)


CASES = [
    ("registered: math.sin", math.sin, (1.0,)),
    ("registered: operator.mul", operator.mul, (1.0, 2.0)),
    ("registered: callable instance (by class)", Model(2.0), (1.0,)),
    ("unregistered: plain function", unregistered, (1.0,)),
    ("unregistered: numpy function", np.linalg.qr, (1.0,)),
]


def measure(f, args, number=200_000, repeats=7) -> float:
    lookup = cr.rrule.lookup
    times = timeit.repeat(lambda: lookup(f, args), number=number, repeat=repeats)
    return statistics.median(times) / number * 1e9


def main() -> str:
    empty = statistics.median(timeit.repeat(lambda: None, number=200_000, repeat=7)) / 200_000 * 1e9
    rows = [(name, measure(f, args)) for name, f, args in CASES]
    lines = [
        "# Rule lookup cost",
        "",
        f"Python {platform.python_version()}, {platform.machine()}; median of 7 repeats of 200,000 lookups.",
        f"A call of an empty lambda costs {empty:.0f} ns on the same run (included in each figure).",
        "",
        "| callable | ns per lookup |",
        "|---|---|",
    ]
    lines += [f"| {name} | {ns:.0f} |" for name, ns in rows]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    table = main()
    out = pathlib.Path(__file__).parent / "results" / "registry_lookup.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(table)
    print(table)
