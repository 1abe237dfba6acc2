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
import os
import pathlib
import platform
import statistics
import time
import timeit

from threadpoolctl import threadpool_limits

import chainrules as cr
from chainrules.core import callable_name

NUMBER, REPEATS = 5_000, 21
#: CPU time of this process, not wall time: on a shared machine a preempted sample would count the other
#: processes' time slices too
TIMER = time.process_time


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


def median_ns(fn, number: int = 200, repeat: int = 15) -> float:
    """For the peers, whose calls take tens to hundreds of microseconds."""
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeat, timer=TIMER)) / number * 1e9


def side_by_side(*fns) -> list[tuple[float, float]]:
    """For each fn: (median ns per call, median ratio to the first fn), timed in alternation so that
    the machine's load changes hit every fn alike (this machine is shared and noisy)."""
    samples = [[] for _ in fns]
    for _ in range(REPEATS):
        for times, fn in zip(samples, fns):
            times.append(timeit.timeit(fn, number=NUMBER, timer=TIMER) / NUMBER * 1e9)
    base = samples[0]
    return [(statistics.median(ts), statistics.median(t / b for t, b in zip(ts, base))) for ts in samples]


def rule_costs(f, args) -> list[tuple[float, float]]:
    rule = cr.rrule.lookup(f, args)
    pushforward = cr.frule.lookup(f, args)
    tangents = (NO, *(1.0 if type(a) is float else NO for a in args))

    def reverse():
        y, back = rule(*args)
        back(1.0)

    return side_by_side(lambda: f(*args), reverse, lambda: pushforward(tangents, *args))


def seed_f(a, b):
    return a / (a + b * b)


def gradient_from_rules(a, b, mul=None, add=None, div=None):
    # what generated adjoint code does: one rule call per operation, pullbacks in reverse
    t1, back1 = mul(b, b)
    t2, back2 = add(a, t1)
    y, back3 = div(a, t2)
    _, da1, dt2 = back3(1.0)
    _, da2, dt1 = back2(dt2)
    _, db1, db2 = back1(dt1)
    return da1 + da2, db1 + db2


def peers(a: float, b: float) -> list[tuple[str, float | None]]:
    rows: list[tuple[str, float | None]] = []
    try:
        import torch

        torch.set_num_threads(1)

        def torch_grad():
            ta = torch.tensor(a, dtype=torch.float64, requires_grad=True)
            tb = torch.tensor(b, dtype=torch.float64, requires_grad=True)
            seed_f(ta, tb).backward()
            return ta.grad, tb.grad

        rows.append(("PyTorch eager (tensors created per call)", median_ns(torch_grad)))
    except ImportError:
        rows.append(("PyTorch", None))
    try:
        import autograd

        autograd_grad = autograd.grad(lambda ab: seed_f(ab[0], ab[1]))
        rows.append(("HIPS autograd", median_ns(lambda: autograd_grad((a, b)))))
    except ImportError:
        rows.append(("HIPS autograd", None))
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        eager = jax.grad(seed_f, argnums=(0, 1))
        jitted = jax.jit(eager)
        jax.block_until_ready(jitted(a, b))

        def jit_call():
            return jax.block_until_ready(jitted(a, b))

        rows.append(("JAX jit (after compiling)", median_ns(jit_call)))
        rows.append(
            ("JAX eager", statistics.median(timeit.repeat(lambda: eager(a, b), number=20, repeat=5)) / 20 * 1e9)
        )
    except ImportError:
        rows.append(("JAX", None))
    return rows


def main() -> str:
    lines = [
        "# Python scalar rules: cost per call on plain floats",
        "",
        f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores, load average "
        f"{os.getloadavg()[0]:.1f} at the start (a shared machine: absolute times vary by 2-3x between runs);",
        "BLAS pools (NumPy's and SciPy's OpenBLAS) pinned to 1 thread with threadpoolctl, PyTorch to 1 thread;",
        f"process CPU time (time.process_time), median of {REPEATS} repeats of {NUMBER:,} calls, all measured "
        "in one run; ratios are medians of "
        "per-repeat ratios, the plain call and the rules timed in alternation.",
        "Rules are looked up once, as an engine caches them.",
        "",
        "| callable | plain call (ns) | rrule + pullback (ns) | ratio | frule (ns) | ratio |",
        "|---|---|---|---|---|---|",
    ]
    for f, args in CASES:
        (plain, _), (reverse, reverse_ratio), (forward, forward_ratio) = rule_costs(f, args)
        lines.append(
            f"| `{callable_name(f)}` | {plain:.0f} | {reverse:.0f} | {reverse_ratio:.1f}x | {forward:.0f} | "
            f"{forward_ratio:.1f}x |"
        )

    a, b = 2.0, 3.0
    rules = {
        "mul": cr.rrule.lookup(operator.mul, (b, b)),
        "add": cr.rrule.lookup(operator.add, (a, b)),
        "div": cr.rrule.lookup(operator.truediv, (a, b)),
    }
    (plain, _), (ours, ours_ratio) = side_by_side(lambda: seed_f(a, b), lambda: gradient_from_rules(a, b, **rules))
    lines += [
        "",
        "## Seed 001: gradient of f(a, b) = a / (a + b*b) at (2, 3)",
        "",
        f"Plain call: {plain:.0f} ns. Ratios are gradient time / plain call time, same run.",
        "",
        "| gradient by | ns per gradient | ratio to plain call |",
        "|---|---|---|",
        f"| our rules, composed as generated adjoint code calls them (no engine bookkeeping) | {ours:.0f} | "
        f"{ours_ratio:.1f}x |",
    ]
    for name, ns in peers(a, b):
        lines.append(f"| {name} | not installed | |" if ns is None else f"| {name} | {ns:.0f} | {ns / plain:.0f}x |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    with threadpool_limits(limits=1):
        table = main()
    out = pathlib.Path(__file__).parent / "results" / "python_rules.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(table)
    print(table)
