"""Cost and accuracy of the rule-testing utilities.

1. Milliseconds per ``test_rrule``/``test_frule`` call (median of repeats) for small and large
   inputs, with the number of calls of ``f`` each made and the cost of one plain call of ``f``.
2. Relative error of ``central_fdm(5, 1)`` (adaptive step) against the fixed-step central
   differences other libraries' gradient checks use (JAX ``check_grads``: h = 1e-4 along a
   direction; PyTorch ``gradcheck``: h = 1e-6), measured in the same run.

Run: ``python benchmarks/testing_utilities.py`` (writes benchmarks/results/testing_utilities.md).
"""

from __future__ import annotations

import math
import operator

try:
    from benchmarks import _common as common
except ImportError:  # run as a script: benchmarks/ is on sys.path
    import _common as common

THREADS_NOTE = common.pin_threads(1)

import numpy as np  # noqa: E402

import chainrules as cr  # noqa: E402
from chainrules.testing import central_fdm, test_frule, test_rrule  # noqa: E402

REPEATS, BUDGET = 15, 0.002


def tester_rows() -> list[list[str]]:
    rng = np.random.default_rng(0)
    cases = [
        ("math.sin(0.5)", math.sin, (0.5,)),
        ("operator.mul(float, float)", operator.mul, (2.0, 3.0)),
        ("operator.mul, 2 arrays of 10", operator.mul, (rng.random(10), rng.random(10))),
        ("operator.mul, 2 arrays of 32 (full FD)", operator.mul, (rng.random(32), rng.random(32))),
        ("operator.mul, 2 arrays of 33 (projections)", operator.mul, (rng.random(33), rng.random(33))),
        ("operator.mul, 2 arrays of 1000", operator.mul, (rng.random(1000), rng.random(1000))),
        ("operator.pow, (3,1) by (1,4) broadcast", operator.pow, (rng.random((3, 1)) + 1, rng.random((1, 4)))),
    ]
    rows = []
    for name, f, args in cases:
        methods = {"plain": lambda f=f, args=args: f(*args)}
        for tester in (test_rrule, test_frule):
            methods[tester.__name__] = lambda tester=tester, f=f, args=args: tester(f, *args)
        t = common.compare(methods, "plain", repeats=REPEATS, budget=BUDGET)
        for tester in (test_rrule, test_frule):
            calls = _count_calls(tester, f, args)
            seconds = t[tester.__name__].seconds
            rows.append([name, tester.__name__, f"{seconds * 1e3:.2f}", str(calls), f"{t['plain'].seconds * 1e6:.2f}"])
    return rows


def _count_calls(tester, f, args) -> int:
    """How many times the tester calls f itself (the primal check and finite differences)."""
    calls = [0]

    def counted(*a):
        calls[0] += 1
        return f(*a)

    # the counting wrapper borrows f's rules, so the tester runs exactly as it does on f
    rule, forward_rule = cr.rrule.lookup(f, args), cr.frule.lookup(f, args)
    cr.rrule.register(counted)(lambda *a, **k: rule(*a, **k))
    cr.frule.register(counted)(lambda t, *a, **k: forward_rule(t, *a, **k))
    tester(counted, *args)
    return calls[0]


def accuracy_table() -> str:
    adaptive = central_fdm(5, 1)

    def fixed(h):
        return lambda f, x: (f(x + h) - f(x - h)) / (2 * h)

    methods = [
        ("central_fdm(5, 1)", adaptive),
        ("central, h=1e-4 (JAX)", fixed(1e-4)),
        ("central, h=1e-6 (PyTorch)", fixed(1e-6)),
    ]
    cases = [
        ("sin", math.sin, math.cos, [0.3, 1.0, 2.5]),
        ("exp", math.exp, math.exp, [-2.0, 1.0, 3.0]),
        ("log", math.log, lambda x: 1 / x, [0.5, 1.0, 10.0]),
    ]
    rows = []
    for name, f, df, points in cases:
        errors = [f"{max(abs(m(f, x) - df(x)) / abs(df(x)) for x in points):.1e}" for _, m in methods]
        rows.append([f"{name} at {', '.join(map(str, points))}", *errors])
    return common.markdown_table(["function", *(name for name, _ in methods)], rows)


def main() -> str:
    testers = tester_rows()
    accuracy = accuracy_table()
    lines = [
        "# Rule-testing utilities: cost and accuracy",
        "",
        f"{common.machine_line()};",
        THREADS_NOTE + ".",
        f"Process CPU time; each figure is the median of {REPEATS} samples of about {BUDGET * 1e3:g} ms each, "
        "the plain call and both testers interleaved in one run;",
        '"calls of f" counts every call the tester makes of the function itself (primal check and finite '
        "differences); the last column is one plain call of f.",
        "",
        common.markdown_table(["function", "tester", "ms per call", "calls of f", "µs per plain call"], testers),
        "",
        "Worst relative error of the first derivative over the points (same run):",
        "",
        accuracy,
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    common.report("testing_utilities", main())
