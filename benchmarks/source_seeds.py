"""The seed examples' gradients on the source engine, as ratios to the plain Python call, side by
side with JAX (jit and eager), PyTorch and HIPS autograd, all in one run.

Run: ``python benchmarks/source_seeds.py`` (writes benchmarks/results/source_seeds.md).

Each figure is the median over rounds of (time of one gradient) / (time of one plain call),
the two timed back to back in every round so that the machine's load cancels out. "engine" is
``pullback_full(f, *args)`` followed by ``back(1.0)``; "cr.gradient" is the public API around
it. BLAS pools (NumPy's and SciPy's OpenBLAS) are pinned to one thread with threadpoolctl, and
PyTorch to one thread.
"""

from __future__ import annotations

import importlib.util
import math
import pathlib
import platform
import statistics
import timeit

from threadpoolctl import threadpool_limits

import chainrules as cr
from chainrules.reverse.source import cache, pullback_full


# ----- the seed functions (plain Python) ----------------------------------------------------------
def f(a, b):
    return a / (a + b * b)


def sin_cos(x):
    return math.sin(math.cos(x))


def square(x):
    return x**2


def five_times(x):
    return 5 * x


def foo(x):
    return five_times(math.sin(square(x)))


def babysqrt(x, t=None, n=10):
    if t is None:
        t = (1 + x) / 2
    return t if n == 0 else babysqrt(x, (t + x / t) / 2, n - 1)


CASES = [
    ("f(a, b) = a / (a + b*b)", f, (2.0, 3.0), 25),
    ("sin(cos(x))", sin_cos, (0.9,), None),
    ("foo(x) = 5 sin(x^2)", foo, (0.7,), None),
    ("babysqrt(x), 10 steps", babysqrt, (2.0,), 40),
]


def has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


# ----- peers --------------------------------------------------------------------------------------


def jax_gradients():
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def jf(a, b):
        return a / (a + b * b)

    def jsin_cos(x):
        return jnp.sin(jnp.cos(x))

    def jfoo(x):
        return 5 * jnp.sin(x**2)

    def jbaby(x, t=None, n=10):
        if t is None:
            t = (1 + x) / 2
        return t if n == 0 else jbaby(x, (t + x / t) / 2, n - 1)

    fns = [(jf, (0, 1)), (jsin_cos, 0), (jfoo, 0), (jbaby, 0)]
    eager = [jax.grad(fn, argnums=argnums) for fn, argnums in fns]
    jitted = [jax.jit(g) for g in eager]

    def run(g):
        return lambda *args: jax.block_until_ready(g(*args))

    return [run(g) for g in eager], [run(g) for g in jitted]


def torch_gradients():
    import torch

    torch.set_num_threads(1)

    def tf(a, b):
        return a / (a + b * b)

    def tsin_cos(x):
        return torch.sin(torch.cos(x))

    def tfoo(x):
        return 5 * torch.sin(x**2)

    def tbaby(x, t=None, n=10):
        if t is None:
            t = (1 + x) / 2
        return t if n == 0 else tbaby(x, (t + x / t) / 2, n - 1)

    def make(fn):
        def gradient(*args):
            xs = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in args]
            fn(*xs).backward()
            return [x.grad.item() for x in xs]

        return gradient

    return [make(fn) for fn in (tf, tsin_cos, tfoo, tbaby)]


def autograd_gradients():
    import autograd
    import autograd.numpy as anp

    def af(ab):
        return ab[0] / (ab[0] + ab[1] * ab[1])

    def asin_cos(x):
        return anp.sin(anp.cos(x))

    def afoo(x):
        return 5 * anp.sin(x**2)

    def ababy(x, t=None, n=10):
        if t is None:
            t = (1 + x) / 2
        return t if n == 0 else ababy(x, (t + x / t) / 2, n - 1)

    g_f = autograd.grad(af)
    grads = [autograd.grad(fn) for fn in (asin_cos, afoo, ababy)]
    return [lambda a, b: g_f(anp.array([a, b])), *grads]


# ----- timing -------------------------------------------------------------------------------------


def per_call(stmt, number: int) -> float:
    return timeit.timeit(stmt, number=number) / number


def ratio(plain, method, rounds: int = 15, budget: float = 0.02) -> tuple[float, float]:
    """(median of time(method) / time(plain), median time of method in seconds)."""
    method()
    plain_n = max(1, int(budget / max(per_call(plain, 20), 1e-9)))
    method_n = max(1, int(budget / max(per_call(method, 3), 1e-9)))
    ratios, times = [], []
    for _ in range(rounds):
        p = per_call(plain, plain_n)
        m = per_call(method, method_n)
        ratios.append(m / p)
        times.append(m)
    return statistics.median(ratios), statistics.median(times)


def attempt(plain, method):
    """``ratio``, or the error's name where the method refuses the function."""
    try:
        return ratio(plain, method)
    except Exception as err:  # the tape engine refuses `math` functions, by design
        return f"refused ({type(err).__name__})"


def cold_call_ms(fn, args) -> float:
    """The first differentiation of a function: parse, analyze, generate, compile, run."""
    cache._transformed.pop(id(fn.__code__), None)
    for inner in (square, five_times):
        cache._transformed.pop(id(inner.__code__), None)
    start = timeit.default_timer()
    pullback_full(fn, *args)[1](1.0)
    return (timeit.default_timer() - start) * 1e3


def main() -> str:
    columns = ["engine", "cr.gradient"]
    peers: dict[str, list] = {}
    if has("jax"):
        eager, jitted = jax_gradients()
        peers["JAX jit"], peers["JAX eager"] = jitted, eager
    if has("torch"):
        peers["PyTorch"] = torch_gradients()
    if has("autograd"):
        peers["autograd"] = autograd_gradients()
    tape = "tape" in cr.api.REVERSE_ENGINES and has("chainrules.reverse.trace")
    if tape:
        columns.append("tape engine")
    names = ["JAX jit", "JAX eager", "PyTorch", "autograd"]
    rows = []
    parsed_before = None
    for i, (label, fn, args, target) in enumerate(CASES):
        cold = cold_call_ms(fn, args)

        def plain(fn=fn, args=args):
            return fn(*args)

        def engine(fn=fn, args=args):
            return pullback_full(fn, *args)[1](1.0)

        def api(fn=fn, args=args):
            return cr.gradient(fn, *args)

        def on_tape(fn=fn, args=args):
            return cr.gradient(fn, *args, engine="tape")

        plain_time = statistics.median(per_call(plain, 20000) for _ in range(5))
        engine()
        parsed_before = dict(cache.stats)
        cells = [ratio(plain, engine), ratio(plain, api)]
        if tape:
            cells.append(attempt(plain, on_tape))
        assert cache.stats == parsed_before, "a repeated call parsed or compiled again"
        for name in names:
            if name in peers:
                g = peers[name][i]
                cells.append(ratio(plain, lambda g=g, args=args: g(*args), rounds=7))
            else:
                cells.append(None)
        verdict = "" if target is None else f" (target ≤ {target}×: {'met' if cells[0][0] <= target else 'missed'})"
        rows.append((label, plain_time, cells, cold, verdict))
    header = columns + names
    lines = [
        "# Source engine: seed examples, gradient ÷ plain call",
        "",
        f"Python {platform.python_version()}, {platform.machine()}; NumPy/SciPy BLAS pinned to 1 thread "
        "(threadpoolctl), PyTorch to 1 thread, JAX on CPU in float64.",
        "Each cell: gradient time ÷ plain-call time, median over rounds timed back to back in one run",
        "(15 rounds for ours, 7 for peers), then the median gradient time. 'engine' is the source",
        "engine's pullback_full + pullback; 'cr.gradient' the public API around it.",
        "Repeated calls neither parse nor compile (checked: the cache counters do not move).",
        "",
        "| function | plain call | " + " | ".join(header) + " | first call (transform) |",
        "|---|---|" + "---|" * len(header) + "---|",
    ]
    for label, plain_time, cells, cold, verdict in rows:
        shown = [
            "not installed"
            if cell is None
            else cell
            if isinstance(cell, str)
            else f"{cell[0]:,.1f}× ({cell[1] * 1e6:,.1f} µs)"
            for cell in cells
        ]
        lines.append(f"| {label}{verdict} | {plain_time * 1e9:.0f} ns | " + " | ".join(shown) + f" | {cold:.1f} ms |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    with threadpool_limits(limits=1):
        table = main()
    out = pathlib.Path(__file__).parent / "results" / "source_seeds.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(table)
    print(table)
