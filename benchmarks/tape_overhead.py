"""Per-operation overhead of the tape engine, beside PyTorch's and autograd's eager reverse modes.

Gradients of seed 001's ``f(a, b) = a / (a + b*b)`` (3 operations) and of scalar chains
``x = np.sin(x) * 1.01 + 0.1`` (3 operations a step, 100 and 10,000 steps) on Python floats,
each as a ratio to the plain Python call, and the cost per recorded operation. All methods run
interleaved in one process; figures are medians over the repeats.

Run: ``python benchmarks/tape_overhead.py`` (writes benchmarks/results/tape_overhead.md).
"""

from __future__ import annotations

import gc
import operator
import os
import platform
import statistics

import numpy as np

try:
    from . import _common
except ImportError:  # run as a script
    import _common

import chainrules as cr
from chainrules.reverse.trace import pullback_full

torch = _common.optional_import("torch")
autograd = _common.optional_import("autograd")
anp = _common.optional_import("autograd.numpy")


def seed_quotient(a, b):
    return a / (a + b * b)


def make_chain(steps: int, sin):
    def chain(x):
        for _ in range(steps):
            x = sin(x) * 1.01 + 0.1
        return x

    chain.__name__ = f"chain_{steps}"
    return chain


def ours_api(f, args):
    return lambda: cr.gradient(f, *args, engine="tape")


def ours_engine(f, args):
    def run():
        _, back = pullback_full(f, *args)
        return back(1.0)

    return run


def rules_alone_quotient():
    """Seed 001's gradient from the same rules chained by hand: what any engine must spend."""
    return _common.quotient_gradient_by_rules(
        cr.rrule.lookup(operator.mul, (1.0, 1.0)),
        cr.rrule.lookup(operator.add, (1.0, 1.0)),
        cr.rrule.lookup(operator.truediv, (1.0, 1.0)),
    )


def rules_alone_chain(steps: int):
    """The chain's gradient from the same rules, their pullbacks kept in a list and run backwards."""
    x = np.float64(0.4)
    r_sin = cr.rrule.lookup(np.sin, (x,))
    r_mul = cr.rrule.lookup(operator.mul, (x, 1.01))
    r_add = cr.rrule.lookup(operator.add, (x, 0.1))

    def run(x):
        collecting = gc.isenabled()
        gc.disable()  # as the tape does while it records and sweeps: the list of closures is long
        try:
            pullbacks = []
            for _ in range(steps):
                y, p_sin = r_sin(x)
                y, p_mul = r_mul(y, 1.01)
                x, p_add = r_add(y, 0.1)
                pullbacks.append((p_sin, p_mul, p_add))
            dx = 1.0
            for p_sin, p_mul, p_add in reversed(pullbacks):
                dx = p_sin(p_mul(p_add(dx)[1])[1])[1]
        finally:
            if collecting:
                gc.enable()
        return (dx,)

    return run


def torch_grad(f, args):
    def run():
        leaves = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in args]
        return torch.autograd.grad(f(*leaves), leaves)

    return run


def autograd_grad(f, args):
    g = autograd.grad(lambda p: f(*p))
    return lambda: g(tuple(args))


CASES = [
    # name, ops per call, our function, torch function, autograd function, args, repeats, calls per repeat,
    # the rules chained by hand
    (
        "f(a, b) = a / (a + b*b)",
        3,
        seed_quotient,
        seed_quotient,
        seed_quotient,
        (2.0, 3.0),
        15,
        300,
        rules_alone_quotient(),
    ),
    (
        "chain, 100 steps",
        300,
        make_chain(100, np.sin),
        make_chain(100, torch.sin) if torch else None,
        make_chain(100, anp.sin) if autograd else None,
        (0.4,),
        15,
        10,
        rules_alone_chain(100),
    ),
    (
        "chain, 10,000 steps",
        30_000,
        make_chain(10_000, np.sin),
        make_chain(10_000, torch.sin) if torch else None,
        make_chain(10_000, anp.sin) if autograd else None,
        (0.4,),
        7,
        1,
        rules_alone_chain(10_000),
    ),
]


def check_against_each_other() -> None:
    for name, _, f, tf, af, args, _, _, by_hand in CASES:
        ours = cr.gradient(f, *args, engine="tape")
        np.testing.assert_allclose(ours, by_hand(*args), rtol=1e-10, err_msg=name)
        if torch:
            theirs = [float(g) for g in torch_grad(tf, args)()]
            np.testing.assert_allclose(ours, theirs, rtol=1e-10, err_msg=name)
        if autograd:
            np.testing.assert_allclose(ours, autograd_grad(af, args)(), rtol=1e-10, err_msg=name)


def fmt_us(seconds: float) -> str:
    us = seconds * 1e6
    return f"{us:,.1f} µs" if us < 10_000 else f"{us / 1000:,.1f} ms"


def main(threads: str) -> str:
    load_before = os.getloadavg()[0]
    check_against_each_other()
    rows = []
    for name, ops, f, tf, af, args, repeats, number, by_hand in CASES:
        methods = {
            "plain": lambda f=f, args=args: f(*args),
            "tape (cr.gradient)": ours_api(f, args),
            "tape (pullback_full + back)": ours_engine(f, args),
            "rules by hand": lambda by_hand=by_hand, args=args: by_hand(*args),
        }
        if torch:
            methods["PyTorch"] = torch_grad(tf, args)
        if autograd:
            methods["autograd"] = autograd_grad(af, args)
        rows.append((name, ops, _common.compare(methods, "plain", repeats=repeats, number=number)))

    lines = [
        "# Tape engine: per-operation overhead",
        "",
        f"Python {platform.python_version()}, NumPy {np.__version__}, "
        f"{_common.version_of('torch')}, {_common.version_of('autograd')}; {os.cpu_count()} cores, shared machine "
        f"(load average {load_before:.1f} at the start of the run, {os.getloadavg()[0]:.1f} at the end). "
        f"{threads}. Process CPU time, medians over interleaved repeats (`benchmarks/_common.compare`, the "
        "cyclic collector paused while a method is timed), all in one run; ratios are medians of the "
        "per-repeat ratios. Inputs are Python floats (0-d float64 tensors for PyTorch, created inside the "
        "timed call as our inputs are boxed inside it). Gradients of all three agree to 1e-10.",
        "",
        "Gradient time as a multiple of the plain Python call:",
        "",
        "| function | recorded ops | plain call | tape (cr.gradient) | tape (engine only) | PyTorch | autograd |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, ops, t in rows:
        cells = [
            name,
            f"{ops:,}",
            fmt_us(t["plain"].seconds),
            f"{t['tape (cr.gradient)'].ratio:,.0f}×",
            f"{t['tape (pullback_full + back)'].ratio:,.0f}×",
            f"{t['PyTorch'].ratio:,.0f}×" if "PyTorch" in t else _common.NOT_INSTALLED,
            f"{t['autograd'].ratio:,.0f}×" if "autograd" in t else _common.NOT_INSTALLED,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "Cost per recorded operation (forward and backward, gradient time ÷ operations), and how many times "
        "cheaper the tape is than PyTorch's eager autograd, per repeat then the median (target: at least 3×):",
        "",
        "| function | tape (cr.gradient) | PyTorch | autograd | PyTorch ÷ tape | target |",
        "|---|---|---|---|---|---|",
    ]
    for name, ops, t in rows:
        ours = t["tape (cr.gradient)"]
        if "PyTorch" in t:
            cheaper = per_repeat_ratio(t["PyTorch"], ours)
            verdict = "met" if cheaper >= 3.0 else "missed"
        cells = [
            name,
            fmt_us(ours.seconds / ops),
            fmt_us(t["PyTorch"].seconds / ops) if "PyTorch" in t else _common.NOT_INSTALLED,
            fmt_us(t["autograd"].seconds / ops) if "autograd" in t else _common.NOT_INSTALLED,
            f"{cheaper:.1f}×" if "PyTorch" in t else _common.NOT_INSTALLED,
            verdict if "PyTorch" in t else "–",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "Where the tape's time goes: the same rules' rrules and pullbacks chained by hand, with no engine (the "
        "least any engine built on these rules spends), against the engine alone (`pullback_full` and its "
        "pullback, without the API around them):",
        "",
        "| function | rules by hand, per operation | tape engine, per operation | engine's own share |",
        "|---|---|---|---|",
    ]
    for name, ops, t in rows:
        by_hand, engine = t["rules by hand"].seconds, t["tape (pullback_full + back)"].seconds
        lines.append(
            f"| {name} | {fmt_us(by_hand / ops)} | {fmt_us(engine / ops)} | {100 * (engine - by_hand) / engine:.0f}% |"
        )
    return "\n".join(lines) + "\n"


def per_repeat_ratio(theirs: _common.Timing, ours: _common.Timing) -> float:
    """The median over repeats of their time ÷ ours, both measured in the same repeat."""
    return statistics.median(t / o for t, o in zip(theirs.samples, ours.samples))


if __name__ == "__main__":
    table = main(_common.pin_threads(1))
    _common.write_results("tape_overhead", table)
    print(table)
