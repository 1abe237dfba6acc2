"""The seed examples' gradients on the source engine, as ratios to the plain Python call, side by
side with JAX (jit and eager), PyTorch and HIPS autograd, all in one run.

Run: ``python benchmarks/source_seeds.py`` (writes benchmarks/results/source_seeds.md).

Our figures come from ``_common.compare``: the plain call, the source engine, ``cr.gradient``
and the tape engine interleaved repeat by repeat (process CPU time, the cyclic collector paused
while a method is timed), each ratio the median of the per-repeat ratios to the plain call.
"engine" is ``pullback_full(f, *args)`` followed by ``back(1.0)``; "cr.gradient" is the public
API around it, what users call, and the one the targets are judged on. Peers are timed on their
own (fewer repeats) and divided by the plain call's median. Threads pinned with
``_common.pin_threads``.
"""

from __future__ import annotations

import importlib.util
import math
import time

try:
    from . import _common
except ImportError:  # run as a script
    import _common

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

OURS_REPEATS = 15
PEER_REPEATS = 7
#: seconds of work per timed batch of calls
BATCH_S = 0.01


def calls_per_batch(method, budget: float = BATCH_S) -> int:
    """How many calls of ``method`` take about ``budget`` seconds."""
    method()
    start = time.process_time()
    n = 0
    while time.process_time() - start < budget / 10 or n < 3:
        method()
        n += 1
    return max(1, int(budget / ((time.process_time() - start) / n)))


def attempt(method):
    """``method`` itself, or the error's name where it refuses the function."""
    try:
        method()
    except Exception as err:  # the tape engine refuses `math` functions, by design
        return f"refused ({type(err).__name__})"
    return method


def cold_call_ms(fn, args) -> float:
    """The first differentiation of a function: parse, analyze, generate, compile, run."""
    cache._transformed.pop(id(fn.__code__), None)
    for inner in (square, five_times):
        cache._transformed.pop(id(inner.__code__), None)
    start = time.perf_counter()
    pullback_full(fn, *args)[1](1.0)
    return (time.perf_counter() - start) * 1e3


def main(threads: str) -> str:
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

        methods = {"plain": plain, "engine": engine, "cr.gradient": api}
        refused = None
        if tape:
            checked = attempt(on_tape)
            if isinstance(checked, str):
                refused = checked
            else:
                methods["tape engine"] = on_tape
        engine()
        parsed_before = dict(cache.stats)
        number = min(calls_per_batch(m) for name, m in methods.items() if name != "plain")
        ours = _common.compare(methods, "plain", repeats=OURS_REPEATS, number=number)
        assert cache.stats == parsed_before, "a repeated call parsed or compiled again"
        cells = [(ours[c].ratio, ours[c].seconds) if c in ours else refused for c in columns]
        for name in names:
            if name in peers:
                g = peers[name][i]
                run = lambda g=g, args=args: g(*args)  # noqa: E731
                t = _common.compare({name: run}, name, repeats=PEER_REPEATS, number=calls_per_batch(run))[name]
                cells.append((t.seconds / ours["plain"].seconds, t.seconds))
            else:
                cells.append(None)
        verdict = ""
        if target is not None:
            met = ours["cr.gradient"].ratio <= target
            verdict = f" (target: cr.gradient ≤ {target}×, {'met' if met else 'missed'})"
        rows.append((label, ours["plain"].seconds, cells, cold, verdict))
    header = columns + names
    lines = [
        "# Source engine: seed examples, gradient ÷ plain call",
        "",
        f"{_common.machine_line()}; {threads}; JAX on CPU in float64.",
        "Each cell: gradient time ÷ plain-call time, then the median gradient time. Ours (engine, cr.gradient,",
        f"tape engine) interleaved with the plain call, {OURS_REPEATS} repeats of process CPU time, each ratio",
        f"the median of the per-repeat ratios; peers timed on their own, {PEER_REPEATS} repeats, ÷ the plain",
        "call's median.",
        "'engine' is the source engine's pullback_full + pullback; 'cr.gradient' the public API around it",
        "(what users call: the targets are judged on it). Repeated calls neither parse nor compile (checked:",
        "the cache counters do not move).",
        "",
        "| function | plain call | " + " | ".join(header) + " | first call (transform) |",
        "|---|---|" + "---|" * len(header) + "---|",
    ]
    for label, plain_time, cells, cold, verdict in rows:
        shown = [
            _common.NOT_INSTALLED
            if cell is None
            else cell
            if isinstance(cell, str)
            else f"{cell[0]:,.1f}× ({cell[1] * 1e6:,.1f} µs)"
            for cell in cells
        ]
        lines.append(f"| {label}{verdict} | {plain_time * 1e9:.0f} ns | " + " | ".join(shown) + f" | {cold:.1f} ms |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    table = main(_common.pin_threads(1))
    _common.write_results("source_seeds", table)
    print(table)
