"""Per-operation overhead of the tape engine, beside PyTorch's and autograd's eager reverse modes.

Gradients of seed 001's ``f(a, b) = a / (a + b*b)`` (3 operations) and of scalar chains
``x = np.sin(x) * 1.01 + 0.1`` (3 operations a step, 100 and 10,000 steps) on Python floats,
each as a ratio to the plain Python call, and the cost per recorded operation. All methods run
interleaved in one process; figures are medians over the repeats.

Run: ``python benchmarks/tape_overhead.py`` (writes benchmarks/results/tape_overhead.md).
"""

from __future__ import annotations

import gc
import os
import pathlib
import platform
import statistics
import time

import numpy as np
from threadpoolctl import threadpool_limits

import chainrules as cr
from chainrules.reverse.trace import pullback_full

try:
    import torch
except ImportError:
    torch = None

try:
    import autograd
    import autograd.numpy as anp
except ImportError:
    autograd = None


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


def torch_grad(f, args):
    def run():
        leaves = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in args]
        return torch.autograd.grad(f(*leaves), leaves)

    return run


def autograd_grad(f, args):
    g = autograd.grad(lambda p: f(*p))
    return lambda: g(tuple(args))


def median_times(methods: dict, repeats: int, number: int) -> dict:
    """Median seconds per call of each method, the methods interleaved within every repeat."""
    samples = {name: [] for name in methods}
    for _ in range(repeats):
        for name, run in methods.items():
            gc.collect()
            start = time.perf_counter()
            for _ in range(number):
                run()
            samples[name].append((time.perf_counter() - start) / number)
    return {name: statistics.median(ts) for name, ts in samples.items()}


CASES = [
    # name, ops per call, our function, torch function, autograd function, args, repeats, calls per repeat
    ("f(a, b) = a / (a + b*b)", 3, seed_quotient, seed_quotient, seed_quotient, (2.0, 3.0), 15, 300),
    (
        "chain, 100 steps",
        300,
        make_chain(100, np.sin),
        make_chain(100, torch.sin) if torch else None,
        make_chain(100, anp.sin) if autograd else None,
        (0.4,),
        15,
        10,
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
    ),
]


def check_against_each_other() -> None:
    for name, _, f, tf, af, args, _, _ in CASES:
        ours = cr.gradient(f, *args, engine="tape")
        if torch:
            theirs = [float(g) for g in torch_grad(tf, args)()]
            np.testing.assert_allclose(ours, theirs, rtol=1e-10, err_msg=name)
        if autograd:
            np.testing.assert_allclose(ours, autograd_grad(af, args)(), rtol=1e-10, err_msg=name)


def fmt_us(seconds: float) -> str:
    us = seconds * 1e6
    return f"{us:,.1f} µs" if us < 10_000 else f"{us / 1000:,.1f} ms"


def main() -> str:
    check_against_each_other()
    rows = []
    for name, ops, f, tf, af, args, repeats, number in CASES:
        methods = {
            "plain": lambda f=f, args=args: f(*args),
            "tape (cr.gradient)": ours_api(f, args),
            "tape (pullback_full + back)": ours_engine(f, args),
        }
        if torch:
            methods["PyTorch"] = torch_grad(tf, args)
        if autograd:
            methods["autograd"] = autograd_grad(af, args)
        times = median_times(methods, repeats, number)
        rows.append((name, ops, times))

    lines = [
        "# Tape engine: per-operation overhead",
        "",
        f"Python {platform.python_version()}, NumPy {np.__version__}, "
        f"PyTorch {torch.__version__ if torch else 'not installed'}, "
        f"autograd {'installed' if autograd else 'not installed'}; {os.cpu_count()} cores, shared machine. "
        "BLAS pools of NumPy and SciPy pinned to 1 thread with threadpoolctl, PyTorch to 1 thread. "
        "Medians over interleaved repeats, all in one run; inputs are Python floats (0-d float64 tensors "
        "for PyTorch, created inside the timed call as our inputs are boxed inside it). Gradients of all "
        "three agree to 1e-10.",
        "",
        "Gradient time as a multiple of the plain Python call:",
        "",
        "| function | recorded ops | plain call | tape (cr.gradient) | tape (engine only) | PyTorch | autograd |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, ops, t in rows:
        plain = t["plain"]
        cells = [
            name,
            f"{ops:,}",
            fmt_us(plain),
            f"{t['tape (cr.gradient)'] / plain:,.0f}×",
            f"{t['tape (pullback_full + back)'] / plain:,.0f}×",
            f"{t['PyTorch'] / plain:,.0f}×" if "PyTorch" in t else "not installed",
            f"{t['autograd'] / plain:,.0f}×" if "autograd" in t else "not installed",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "Cost per recorded operation (forward and backward, gradient time ÷ operations), and how many times "
        "cheaper the tape is than PyTorch's eager autograd (target: at least 3×):",
        "",
        "| function | tape (cr.gradient) | PyTorch | autograd | PyTorch ÷ tape |",
        "|---|---|---|---|---|",
    ]
    for name, ops, t in rows:
        ours = t["tape (cr.gradient)"] / ops
        cells = [
            name,
            fmt_us(ours),
            fmt_us(t["PyTorch"] / ops) if "PyTorch" in t else "not installed",
            fmt_us(t["autograd"] / ops) if "autograd" in t else "not installed",
            f"{t['PyTorch'] / t['tape (cr.gradient)']:.1f}×" if "PyTorch" in t else "not installed",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if torch:
        torch.set_num_threads(1)
    with threadpool_limits(limits=1):
        table = main()
    out = pathlib.Path(__file__).parent / "results" / "tape_overhead.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(table)
    print(table)
