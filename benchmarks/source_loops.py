"""Loops on the source engine: seed 004's ``mysum``, a 10,000-step scalar chain and element loops
over computed arrays, side by side with PyTorch, HIPS autograd and JAX, all in one run.

Run: ``python benchmarks/source_loops.py`` (writes benchmarks/results/source_loops.md).

``mysum`` (``total += X[i]`` in a Python loop) for n = 1e3, 1e4, 1e5: the time of one gradient
(median over repeats), its growth for 10× n, and its peak memory (tracemalloc, in units of an
array of n float64; the input itself excluded). The chain ``x = sin(x) * 1.01 + 0.1``: the
gradient's time ÷ the plain loop's, interleaved in every round. BLAS pools (NumPy's and
SciPy's OpenBLAS) are pinned to one thread with threadpoolctl, PyTorch and XLA to one thread.
"""

from __future__ import annotations

import math
import statistics

try:
    from benchmarks import _common as common
except ImportError:  # run as a script: benchmarks/ is on sys.path
    import _common as common

THREADS_NOTE = common.pin_threads(1)  # before JAX is imported

import numpy as np  # noqa: E402

import chainrules as cr  # noqa: E402
from chainrules.reverse.source import pullback_full  # noqa: E402
from chainrules.testing.zoo.arrays import mysum  # noqa: E402  (seed 004)

#: the time a sample of the chain table fills, calling a fast method several times
BUDGET = 0.002


def chain(x, n):
    for _ in range(n):
        x = math.sin(x) * 1.01 + 0.1
    return x


def np_chain(x, n):  # the tape engine refuses math.sin on tracked values: np.sin instead
    for _ in range(n):
        x = np.sin(x) * 1.01 + 0.1
    return x


def has(module: str) -> bool:
    return common.optional_import(module) is not None


# ----- mysum on every system ------------------------------------------------------------------------


def source_mysum(X):
    return lambda: pullback_full(mysum, X)[1](1.0)


def tape_mysum(X):
    return lambda: cr.pullback(mysum, X, engine="tape")[1](1.0)


def torch_mysum(X):
    import torch

    t = torch.tensor(X)

    def run():
        x = t.clone().requires_grad_(True)
        total = 0.0
        for i in range(len(x)):
            total = total + x[i]
        total.backward()
        return x.grad

    return run


def autograd_mysum(X):
    import autograd

    g = autograd.grad(mysum)
    return lambda: g(X)


def jax_mysum(X, jit: bool):
    import jax

    jax.config.update("jax_enable_x64", True)
    g = jax.grad(mysum)
    if jit:
        g = jax.jit(g)
    return lambda: jax.block_until_ready(g(X))


#: rounds of the mysum table where not 7: the slow peers take seconds per gradient at n = 1e5
ROUNDS = {"PyTorch": 3, "autograd": 1, "JAX eager": 1}


def mysum_table() -> list[str]:
    sizes = [1_000, 10_000, 100_000]
    systems = [("source engine", source_mysum, sizes, True)]
    if "tape" in cr.api.REVERSE_ENGINES and has("chainrules.reverse.trace"):
        systems.append(("tape engine", tape_mysum, sizes, True))
    systems.append(("PyTorch", torch_mysum if has("torch") else None, sizes, False))
    systems.append(("autograd", autograd_mysum if has("autograd") else None, sizes, False))
    # eager JAX takes over a second per 1e3 elements; a jitted loop unrolls at compile time
    systems.append(("JAX eager", (lambda X: jax_mysum(X, False)) if has("jax") else None, sizes[:1], False))
    systems.append(
        ("JAX jit (after compiling)", (lambda X: jax_mysum(X, True)) if has("jax") else None, sizes[:1], False)
    )
    rng = np.random.default_rng(0)
    inputs = {n: rng.standard_normal(n) for n in sizes}
    results: dict[str, dict[int, tuple[float, float | None]]] = {}
    growths: dict[str, list[float]] = {}
    compile_note = ""
    for name, make, ns, measure_memory in systems:
        if make is None:
            continue
        fns = {n: make(inputs[n]) for n in ns}
        if name.startswith("JAX jit"):
            start = common.TIMER()
            fns[ns[0]]()
            compile_note = f"; the jitted gradient compiled in {common.TIMER() - start:.1f} s at n = {ns[0]}"
        fns[ns[0]]()  # warm up: specializations, caches
        # the sizes are timed in turn within each round, so that the machine's load changes
        # affect all of them alike; growth is the median over rounds of the per-round ratio
        t = common.compare(fns, ns[0], repeats=ROUNDS.get(name, 7), number=1, warmup=0)
        results[name] = {n: (t[n].seconds, common.peak_bytes(fns[n]) / (8 * n) if measure_memory else None) for n in ns}
        growths[name] = [
            statistics.median(tb / ta for ta, tb in zip(t[a].samples, t[b].samples)) for a, b in zip(ns, ns[1:])
        ]
    source = results["source engine"]
    lines = [
        "## Seed 004's `mysum`: gradient of `total += X[i]` over a Python loop",
        "",
        f"Median time of one gradient (pullback and pullback call together){compile_note}; rounds: "
        + ", ".join(f"{ROUNDS.get(name, 7)} for {name}" for name, make, _, _ in systems if make is not None)
        + " (the slow peers fewer, to bound the run's time).",
        "Growth: time at 10× n ÷ time at n, median over rounds in which the sizes are timed in turn.",
        "Memory: tracemalloc peak during one gradient, in arrays of",
        "n float64 (NumPy and the Python objects; PyTorch and JAX allocate outside tracemalloc's view).",
        "",
        "| system | n = 1e3 | n = 1e4 | n = 1e5 | growth 1e3→1e4 | growth 1e4→1e5 | peak memory (arrays of n) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, make, _sizes, _ in systems:
        if make is None:
            lines.append(f"| {name} | not installed | | | | | |")
            continue
        row = results[name]
        cells = [f"{row[n][0] * 1e3:,.2f} ms" if n in row else "—" for n in sizes]
        measured = growths.get(name, [])
        growth = [f"{g:.1f}×" for g in measured] + ["—"] * (len(sizes) - 1 - len(measured))
        memory = ", ".join(f"{row[n][1]:.2f}" for n in sizes if n in row and row[n][1] is not None) or "—"
        lines.append(f"| {name} | " + " | ".join(cells + growth) + f" | {memory} |")
    if "PyTorch" in results:
        ratio = results["PyTorch"][10_000][0] / source[10_000][0]
        lines += ["", f"At n = 1e4 the source engine is {ratio:.1f}× faster than PyTorch (target: at least 5×)."]
    worst = max(growths["source engine"])
    peak = max(m for _, m in source.values())
    lines += [
        f"Largest growth for 10× n: {worst:.1f}× (target: at most 12×); peak memory {peak:.2f} arrays of n floats "
        "(target: within 3).",
    ]
    return lines


# ----- the scalar chain --------------------------------------------------------------------------


def ratio(plain, method, rounds: int) -> tuple[float, float]:
    """The median over rounds of the gradient's time ÷ the plain loop's, interleaved, and the gradient's median time."""
    t = common.compare({"plain": plain, "gradient": method}, "plain", repeats=rounds, warmup=1, budget=BUDGET)
    return t["gradient"].ratio, t["gradient"].seconds


def chain_table() -> list[str]:
    rows = []
    for steps in (100, 10_000):
        rounds = 21 if steps == 100 else 7

        def plain(steps=steps):
            return chain(0.4, steps)

        def ours(steps=steps):
            return pullback_full(chain, 0.4, steps)[1](1.0)

        rows.append((f"source engine, {steps:,} steps", *ratio(plain, ours, rounds)))
        if "tape" in cr.api.REVERSE_ENGINES and has("chainrules.reverse.trace"):

            def tape(steps=steps):
                return cr.gradient(np_chain, 0.4, steps, engine="tape")

            rows.append((f"tape engine (np.sin), {steps:,} steps", *ratio(plain, tape, rounds)))
        if has("torch"):
            import torch

            def torch_chain(steps=steps):
                x0 = torch.tensor(0.4, dtype=torch.float64, requires_grad=True)
                x = x0
                for _ in range(steps):
                    x = torch.sin(x) * 1.01 + 0.1
                x.backward()
                return x0.grad

            rows.append((f"PyTorch, {steps:,} steps", *ratio(plain, torch_chain, min(rounds, 5))))
        if has("autograd"):
            import autograd
            import autograd.numpy as anp

            def achain(x, steps=steps):
                for _ in range(steps):
                    x = anp.sin(x) * 1.01 + 0.1
                return x

            g = autograd.grad(achain)
            rows.append((f"autograd, {steps:,} steps", *ratio(plain, lambda g=g: g(0.4), min(rounds, 5))))
        if has("jax") and steps == 100:
            import jax
            import jax.numpy as jnp

            def jchain(x):
                for _ in range(steps):
                    x = jnp.sin(x) * 1.01 + 0.1
                return x

            eager = jax.grad(jchain)
            jitted = jax.jit(jax.grad(jchain))
            start = common.TIMER()
            jax.block_until_ready(jitted(0.4))
            compile_s = common.TIMER() - start
            rows.append(
                (
                    f"JAX jit, {steps:,} steps (compiled in {compile_s:.2f} s)",
                    *ratio(plain, lambda: jax.block_until_ready(jitted(0.4)), rounds),
                )
            )
            rows.append((f"JAX eager, {steps:,} steps", *ratio(plain, lambda: jax.block_until_ready(eager(0.4)), 3)))
    ours_10k = next(r for r in rows if r[0] == "source engine, 10,000 steps")[1]
    lines = [
        "## The scalar chain `x = sin(x) * 1.01 + 0.1`",
        "",
        "Gradient time ÷ plain-loop time (the `math.sin` loop, same number of steps), median of the per-round",
        f"ratios, the two interleaved in each round (a sample fills about {BUDGET * 1e3:g} ms), and the median "
        "gradient time.",
        "",
        "| system | gradient ÷ plain loop | gradient time |",
        "|---|---|---|",
    ]
    lines += [f"| {name} | {r:,.1f}× | {t * 1e3:,.2f} ms |" for name, r, t in rows]
    lines += ["", f"10,000 steps on the source engine: {ours_10k:.1f}× the plain loop (target: at most 30×)."]
    return lines


# ----- element loops over computed arrays -------------------------------------------------------


def squares_1d(x):
    y = np.sin(x)  # a computed array: its dtype and dimensions follow from x's
    s = 0.0
    for i in range(len(y)):
        s = s + y[i] * y[i]
    return s


def squares_2d(B):
    A = np.tanh(B)
    s = 0.0
    n, m = A.shape
    for i in range(n):
        for j in range(m):
            s = s + A[i, j] * A[i, j]
    return s


def peer_loops(sin, tanh):
    """``squares_1d`` and ``squares_2d`` with another library's ``sin`` and ``tanh`` (PyTorch's,
    autograd's); ours call NumPy's by name, which the source engine reads as module functions."""

    def squares_1d(x):
        y = sin(x)
        s = 0.0
        for i in range(len(y)):
            s = s + y[i] * y[i]
        return s

    def squares_2d(B):
        A = tanh(B)
        s = 0.0
        n, m = A.shape
        for i in range(n):
            for j in range(m):
                s = s + A[i, j] * A[i, j]
        return s

    return squares_1d, squares_2d


def element_loops_table() -> list[str]:
    rng = np.random.default_rng(1)
    cases = [
        ("`y = np.sin(x)`, 1,000 × `y[i] * y[i]`", squares_1d, rng.standard_normal(1000)),
        ("`A = np.tanh(B)`, 30×30 × `A[i, j] * A[i, j]`", squares_2d, rng.standard_normal((30, 30))),
    ]
    rows = []
    for label, f, x in cases:

        def plain(f=f, x=x):
            return f(x)

        def ours(f=f, x=x):
            return pullback_full(f, x)[1](1.0)

        rows.append((label, "source engine", *ratio(plain, ours, 7)))
        if "tape" in cr.api.REVERSE_ENGINES and has("chainrules.reverse.trace"):
            rows.append((label, "tape engine", *ratio(plain, lambda f=f, x=x: cr.gradient(f, x, engine="tape"), 7)))
        if has("torch"):
            import torch

            loss, t = peer_loops(torch.sin, torch.tanh)[x.ndim - 1], torch.tensor(x)

            def torch_grad(loss=loss, t=t):
                v = t.clone().requires_grad_(True)
                loss(v).backward()
                return v.grad

            rows.append((label, "PyTorch", *ratio(plain, torch_grad, 3)))
        if has("autograd"):
            import autograd
            import autograd.numpy as anp

            g = autograd.grad(peer_loops(anp.sin, anp.tanh)[x.ndim - 1])
            rows.append((label, "autograd", *ratio(plain, lambda g=g, x=x: g(x), 3)))
    lines = [
        "## Element loops over a computed array",
        "",
        "Gradient time ÷ plain-loop time (the same function run without differentiation), median of the",
        "per-round ratios, interleaved, and the median gradient time. The source engine knows the computed",
        "array's dtype and dimensions, so each `y[i]` / `A[i, j]` takes its partial inline (no pullback per",
        "element). JAX is not timed here: eager JAX takes seconds per gradient, and `jit` unrolls the loop.",
        "",
        "| loop | system | gradient ÷ plain loop | gradient time |",
        "|---|---|---|---|",
    ]
    lines += [f"| {label} | {name} | {r:,.1f}× | {t * 1e3:,.2f} ms |" for label, name, r, t in rows]
    return lines


def main() -> str:
    lines = [
        "# Source engine: loops",
        "",
        f"{common.machine_line()};",
        f"{THREADS_NOTE}; JAX on CPU in float64. Process CPU time throughout. Peers: "
        + ", ".join(common.version_of(name) for name in ("torch", "autograd", "jax"))
        + ".",
        "",
    ]
    lines += mysum_table() + [""] + chain_table() + [""] + element_loops_table()
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    common.report("source_loops", main())
