"""Seed 004's ``mysum`` on the tape engine: time and memory of the gradient of a Python loop of ``X[i]``.

``total += X[i]`` for ``i`` in ``range(n)``, for n = 1e3, 1e4, 1e5. With the ``getitem`` rule's
``InplaceableThunk`` cotangents the gradient should cost O(n) time and allocate one array of
``n`` floats (seed 004); peers that build a dense cotangent per ``X[i]`` take O(n^2). Beside
PyTorch, autograd and JAX (eager, and jit-compiled) where they run in reasonable time, all in
one process, medians over repeats.

Memory is measured with ``tracemalloc`` in separate runs (it slows Python down): the peak over
the whole gradient, what the tape holds when the forward pass ends, and the extra memory the
backward sweep allocates on top of it, in units of one array of ``n`` float64s.

Run: ``python benchmarks/tape_mysum.py`` (writes benchmarks/results/tape_mysum.md).
"""

from __future__ import annotations

import gc
import operator
import os
import pathlib
import platform
import statistics
import time
import tracemalloc

import numpy as np
from threadpoolctl import threadpool_limits

import chainrules as cr

try:
    import torch
except ImportError:
    torch = None

try:
    import autograd
except ImportError:
    autograd = None

try:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
except ImportError:
    jax = None

SIZES = (1_000, 10_000, 100_000)
# a peer with quadratic cost is not run where one gradient would take longer than this
PEER_BUDGET_S = 60.0


def mysum(X):
    total = 0.0
    for i in range(len(X)):
        total += X[i]
    return total


def ours(X):
    return lambda: cr.gradient(mysum, X, engine="tape")[0]


def rules_by_hand(X):
    """The gradient from the same rules chained by hand (no engine), accumulating as the tape does."""
    r_getitem = cr.rrule.lookup(operator.getitem, (X, 0))
    r_add = cr.rrule.lookup(operator.add, (X[0], X[0]))

    def run():
        gc.disable()  # as the tape does while it records and sweeps
        try:
            total, pullbacks = 0.0, []
            for i in range(len(X)):
                x_i, p_getitem = r_getitem(X, i)
                total, p_add = r_add(total, x_i)
                pullbacks.append((p_getitem, p_add))
            dX, owned, dtotal = cr.ZeroTangent(), False, 1.0
            for p_getitem, p_add in reversed(pullbacks):
                _, dtotal, dx_i = p_add(dtotal)
                dX, owned = cr.accumulate(dX, owned, p_getitem(dx_i)[1])
        finally:
            gc.enable()
        return cr.unthunk(dX)

    return run


def torch_grad(X):
    def run():
        leaf = torch.tensor(X, requires_grad=True)
        return torch.autograd.grad(mysum(leaf), leaf)[0]

    return run


def autograd_grad(X):
    g = autograd.grad(mysum)
    return lambda: g(X)


def jax_eager(X):
    g = jax.grad(mysum)
    g(jnp.asarray(X[:10])).block_until_ready()  # JAX compiles each primitive on first use: not timed
    return lambda: g(jnp.asarray(X)).block_until_ready()


def timed(run, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        run()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def cpu_timed(run, repeats: int) -> float:
    """Median CPU seconds of this thread per call: what the work costs, whatever else the machine runs."""
    samples = []
    for _ in range(repeats):
        gc.collect()
        start = time.thread_time()
        run()
        samples.append(time.thread_time() - start)
    return statistics.median(samples)


def memory(X) -> tuple[float, float, float]:
    """(peak over the gradient, tape after the forward pass, extra during the sweep) in bytes."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        y, back = cr.pullback(mysum, X, engine="tape")
        after_forward = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        (dX,) = back(1.0)
        peak_sweep = tracemalloc.get_traced_memory()[1]
        del y, back, dX
        gc.collect()
        tracemalloc.reset_peak()
        cr.gradient(mysum, X, engine="tape")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak - base, after_forward - base, peak_sweep - after_forward


def main() -> str:
    load_before = os.getloadavg()[0]
    rng = np.random.default_rng(0)
    rows = []
    for n in SIZES:
        X = rng.standard_normal(n)
        np.testing.assert_array_equal(ours(X)(), np.ones(n))
        np.testing.assert_array_equal(rules_by_hand(X)(), np.ones(n))
        repeats = 15 if n <= 10_000 else 5
        t_ours = timed(ours(X), repeats)
        row = {
            "n": n,
            "tape": t_ours,
            "tape CPU": cpu_timed(ours(X), repeats),
            "rules by hand": timed(rules_by_hand(X), repeats),
            "memory": memory(X),
        }
        peers = {}
        if torch:
            peers["PyTorch"] = (torch_grad(X), 15 if n <= 1_000 else 3)
        if autograd:
            peers["autograd"] = (autograd_grad(X), 7 if n <= 1_000 else 3)
        if jax and n <= 1_000:
            peers["JAX (eager)"] = (jax_eager(X), 1)
        for name, (run, repeats) in peers.items():
            projected = _projected(rows, name, n)
            if projected is not None and projected > PEER_BUDGET_S:
                row[name] = f"not run (≈ {projected:,.0f} s projected from n/10, quadratic)"
                continue
            start = time.perf_counter()
            np.testing.assert_allclose(np.asarray(run()), np.ones(n))
            first = time.perf_counter() - start
            row[name] = first if repeats == 1 else timed(run, repeats)
        rows.append(row)
    jit = _jax_jit(rng.standard_normal(SIZES[0])) if jax else None
    return _table(rows, jit, (load_before, os.getloadavg()[0]))


def _projected(rows, name, n):
    """The time at n if it grows quadratically from the previous size, or None."""
    if not rows or not isinstance(rows[-1].get(name), float):
        return None
    return rows[-1][name] * (n / rows[-1]["n"]) ** 2


def _jax_jit(X):
    g = jax.jit(jax.grad(mysum))
    start = time.perf_counter()
    g(jnp.asarray(X)).block_until_ready()
    compile_s = time.perf_counter() - start
    run = timed(lambda: g(jnp.asarray(X)).block_until_ready(), 15)
    return compile_s, run


def _fmt(t) -> str:
    if isinstance(t, str):
        return t
    if t < 1e-3:
        return f"{t * 1e6:,.0f} µs"
    if t < 1.0:
        return f"{t * 1e3:,.1f} ms"
    return f"{t:,.2f} s"


def _table(rows, jit, load) -> str:
    peers = [p for p in ("PyTorch", "autograd", "JAX (eager)") if any(p in r for r in rows)]
    lines = [
        "# Tape engine: seed 004's mysum",
        "",
        f"Python {platform.python_version()}, NumPy {np.__version__}, "
        f"PyTorch {torch.__version__ if torch else 'not installed'}, "
        f"autograd {'installed' if autograd else 'not installed'}, JAX {jax.__version__ if jax else 'not installed'}; "
        f"{os.cpu_count()} cores, shared machine (load average {load[0]:.1f} at the start of the run, "
        f"{load[1]:.1f} at the end); BLAS pools of NumPy and SciPy pinned to 1 thread with "
        "threadpoolctl, PyTorch to 1 thread. `gradient(mysum, X)` for `mysum(X)`: `total += X[i]` over "
        "`range(len(X))`. Medians over repeats (15 for the tape up to n = 1e4, 5 at 1e5; peers fewer, "
        "JAX eager once, after a warm-up at n = 10 that compiles its primitives), all in one run. Every "
        "gradient is checked to be all ones.",
        "",
        "| n | tape | " + " | ".join(peers) + " | tape ÷ PyTorch | tape time ÷ previous n |",
        "|---|---|" + "---|" * len(peers) + "---|---|",
    ]
    previous = None
    for row in rows:
        cells = [f"{row['n']:,}", _fmt(row["tape"])]
        cells += [_fmt(row.get(p, "not run")) for p in peers]
        torch_t = row.get("PyTorch")
        cells.append(f"{row['tape'] / torch_t:.2f}" if isinstance(torch_t, float) else "–")
        cells.append(f"{row['tape'] / previous:.1f}× (n ×10)" if previous else "–")
        previous = row["tape"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "The same rules chained by hand, with no engine (the least any engine built on them spends), "
        "against the tape engine (through `cr.gradient`):",
        "",
        "| n | rules by hand | tape | engine's own share |",
        "|---|---|---|---|",
    ]
    for row in rows:
        by_hand, tape = row["rules by hand"], row["tape"]
        lines.append(f"| {row['n']:,} | {_fmt(by_hand)} | {_fmt(tape)} | {100 * (tape - by_hand) / tape:.0f}% |")
    lines += [
        "",
        "Linear time, seen without the other users of the machine: the tape's CPU time (this thread's, "
        "median over the same repeats) per loop step.",
        "",
        "| n | tape, CPU time | per loop step | ÷ previous n |",
        "|---|---|---|---|",
    ]
    previous = None
    for row in rows:
        cpu = row["tape CPU"]
        ratio = f"{cpu / previous:.1f}× (n ×10)" if previous else "–"
        lines.append(f"| {row['n']:,} | {_fmt(cpu)} | {cpu / row['n'] * 1e6:.2f} µs | {ratio} |")
        previous = cpu
    if jit:
        lines += [
            "",
            f"JAX jit at n = {SIZES[0]:,}: {_fmt(jit[1])} a call after a {_fmt(jit[0])} compile that unrolls the loop.",
        ]
    lines += [
        "",
        "Memory (tracemalloc), in MB and in arrays of n float64s (8n bytes). The tape holds one record per "
        "operation (two per loop step: `X[i]` and `+=`); the sweep allocates the gradient on top of it "
        "(target: within 3 arrays of n floats).",
        "",
        "| n | peak over the gradient | tape after the forward pass | tape per operation | "
        "extra during the sweep | extra in arrays of n floats |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        n = row["n"]
        peak, tape, extra = row["memory"]
        lines.append(
            f"| {n:,} | {peak / 1e6:,.2f} MB | {tape / 1e6:,.2f} MB | {tape / (2 * n):,.0f} B | "
            f"{extra / 1e6:,.3f} MB | {extra / (8 * n):.2f} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if torch:
        torch.set_num_threads(1)
    with threadpool_limits(limits=1):
        table = main()
    out = pathlib.Path(__file__).parent / "results" / "tape_mysum.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(table)
    print(table)
