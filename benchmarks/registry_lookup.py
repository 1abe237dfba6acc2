"""Rule lookup on the hot path: nanoseconds per ``rrule.lookup`` for registered and unregistered callables.

Run: ``python benchmarks/registry_lookup.py`` (writes benchmarks/results/registry_lookup.md).
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass

import numpy as np

try:
    from . import _common
except ImportError:  # run as a script
    import _common

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
    def model_pullback(dy):
        return cr.Tangent[Model](k=dy * x), dy * m.k

    return m(x), model_pullback


CASES = [
    ("registered: math.sin", math.sin, (1.0,)),
    ("registered: operator.mul", operator.mul, (1.0, 2.0)),
    ("registered, typed on its arguments: operator.getitem of an array", operator.getitem, (np.ones(3), 1)),
    ("registered: a callable instance, by its class", Model(2.0), (1.0,)),
    ("unregistered: a plain function", unregistered, (1.0,)),
    ("unregistered: a NumPy function", np.linalg.multi_dot, (1.0,)),
]

LOOKUPS = 10_000


def main() -> str:
    lookup = cr.rrule.lookup

    def many(f, args):
        def run():
            for _ in range(LOOKUPS):
                lookup(f, args)

        return run

    def empty_loop():
        for _ in range(LOOKUPS):
            pass

    methods = {"empty loop": empty_loop} | {name: many(f, args) for name, f, args in CASES}
    timings = _common.compare(methods, "empty loop", repeats=15, number=3)
    loop_ns = timings["empty loop"].seconds / LOOKUPS * 1e9
    rows = [[name, f"{timings[name].seconds / LOOKUPS * 1e9 - loop_ns:.0f}"] for name, _, _ in CASES]
    return "\n".join(
        [
            "# Rule lookup cost",
            "",
            f"{_common.machine_line()}. Median of 15 repeats of {3 * LOOKUPS:,} lookups each, process CPU time,",
            f"the cost of the empty loop ({loop_ns:.0f} ns per iteration) subtracted.",
            "",
            _common.markdown_table(["callable", "ns per lookup"], rows),
        ]
    )


if __name__ == "__main__":
    table = main()
    _common.write_results("registry_lookup", table)
    print(table)
