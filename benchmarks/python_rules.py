"""Cost of the Python scalar rules (``math``, ``operator``, builtins) on plain floats.

For each callable: the plain call, the rule (looked up once, as an engine caches it) plus one
pullback call, and the ``frule``, in nanoseconds and as ratios to the plain call. Then seed 001's
``f(a, b) = a / (a + b*b)``: its gradient assembled from our three rules the way generated adjoint
code calls them (without an engine's bookkeeping), side by side with PyTorch (eager), HIPS
autograd and JAX (jit-compiled and eager) in the same run.

Run: ``python benchmarks/python_rules.py`` (writes benchmarks/results/python_rules.md).
"""

from __future__ import annotations

import dataclasses
import math
import operator

try:
    from benchmarks import _common as common
except ImportError:  # run as a script: benchmarks/ is on sys.path
    import _common as common

THREADS_NOTE = common.pin_threads(1)  # before JAX is imported

import numpy as np  # noqa: E402

import chainrules as cr  # noqa: E402
from chainrules.core import callable_name  # noqa: E402

NUMBER, REPEATS = 5_000, 21
#: seconds per sample in the seed-001 table, whose methods are up to 10^5 times apart
BUDGET = 0.005


@dataclasses.dataclass
class Params:
    w: float
    b: float


NO = cr.NoTangent()

CASES = [
    (math.sin, (0.7,)),
    (math.exp, (0.7,)),
    (math.tanh, (0.7,)),
    (math.log, (0.7,)),
    (math.sqrt, (0.7,)),
    (math.atan2, (0.7, 1.3)),
    (math.pow, (0.7, 1.3)),
    (math.hypot, (0.7, 1.3)),
    (operator.add, (0.7, 1.3)),
    (operator.sub, (0.7, 1.3)),
    (operator.mul, (0.7, 1.3)),
    (operator.truediv, (0.7, 1.3)),
    (operator.pow, (0.7, 2)),
    (operator.neg, (0.7,)),
    (operator.getitem, ((0.7, 1.3, 2.1), 1)),
    (getattr, (Params(0.7, 1.3), "w")),
    (abs, (-0.7,)),
    (max, (0.7, 1.3)),
    (float, (3,)),
]


def rule_costs(f, args) -> dict[str, common.Timing]:
    rule = cr.rrule.lookup(f, args)
    pushforward = cr.frule.lookup(f, args)
    tangents = (NO, *(1.0 if type(a) is float else NO for a in args))

    def reverse():
        y, back = rule(*args)
        back(1.0)

    methods = {"plain": lambda: f(*args), "rrule": reverse, "frule": lambda: pushforward(tangents, *args)}
    return common.compare(methods, "plain", repeats=REPEATS, number=NUMBER)


def seed_f(a, b):
    return a / (a + b * b)


def main() -> str:
    lines = [
        "# Python scalar rules: cost per call on plain floats",
        "",
        f"{common.machine_line()} (a shared machine: absolute times vary by 2-3x between runs);",
        THREADS_NOTE + ";",
        f"process CPU time, median of {REPEATS} repeats of {NUMBER:,} calls, all measured "
        "in one run; ratios are medians of per-repeat ratios, the plain call and the rules timed in alternation.",
        "Rules are looked up once, as an engine caches them.",
        "",
    ]
    rows = []
    for f, args in CASES:
        t = rule_costs(f, args)
        rows.append(
            [f"`{callable_name(f)}`", f"{t['plain'].seconds * 1e9:.0f}"]
            + [
                cell
                for name in ("rrule", "frule")
                for cell in (f"{t[name].seconds * 1e9:.0f}", f"{t[name].ratio:.1f}x")
            ]
        )
    headers = ["callable", "plain call (ns)", "rrule + pullback (ns)", "ratio", "frule (ns)", "ratio"]
    lines.append(common.markdown_table(headers, rows))

    a, b = 2.0, 3.0
    gradient_from_rules = common.quotient_gradient_by_rules(
        cr.rrule.lookup(operator.mul, (b, b)),
        cr.rrule.lookup(operator.add, (a, b)),
        cr.rrule.lookup(operator.truediv, (a, b)),
    )
    expected = (b * b / (a + b * b) ** 2, -2 * a * b / (a + b * b) ** 2)
    ours = "our rules, composed as generated adjoint code calls them (no engine bookkeeping)"
    methods = {"plain": lambda: seed_f(a, b), ours: lambda: gradient_from_rules(a, b)}
    missing = []
    for peer in common.PEERS:
        run = common.peer_vjp(peer, lambda xp, a, b: seed_f(a, b), (a, b))
        if run is None:
            missing.append(peer)
            continue
        methods[peer] = run
    for name, run in methods.items():
        if name != "plain":
            np.testing.assert_allclose([float(g) for g in run()], expected, rtol=1e-12, err_msg=name)
    t = common.compare(methods, "plain", repeats=REPEATS, budget=BUDGET)
    rows = [[name, f"{t[name].seconds * 1e9:.0f}", f"{t[name].ratio:.1f}x"] for name in methods if name != "plain"]
    rows += [[peer, common.NOT_INSTALLED, ""] for peer in missing]
    lines += [
        "",
        "## Seed 001: gradient of f(a, b) = a / (a + b*b) at (2, 3)",
        "",
        f"Plain call: {t['plain'].seconds * 1e9:.0f} ns. Ratios are medians of the per-repeat ratios of gradient "
        f"time to plain call time, all interleaved in one run ({REPEATS} repeats of about {BUDGET * 1e3:g} ms per "
        "method); every gradient is checked against the analytic one first. Peers: "
        + ", ".join(common.version_of(name) for name in ("jax", "torch", "autograd"))
        + "; JAX jit is timed after compiling, PyTorch on float64 scalar tensors made once.",
        "",
        common.markdown_table(["gradient by", "ns per gradient", "ratio to plain call"], rows),
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    common.report("python_rules", main())
