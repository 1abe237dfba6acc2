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
import platform
import statistics
import time
import tracemalloc

import numpy as np

try:
    from . import _common
except ImportError:  # run as a script
    import _common

import chainrules as cr

torch = _common.optional_import("torch")
autograd = _common.optional_import("autograd")
jax = _common.optional_import("jax")
if jax is not None:
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

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
        collecting = gc.isenabled()
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
            if collecting:
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
    """Median seconds of one call (``_common.compare``: process CPU time, the collector paused)."""
    return _common.compare({"run": run}, "run", repeats=repeats, number=1, warmup=1)["run"].seconds


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


def main(threads: str) -> str:
    load_before = os.getloadavg()[0]
    rng = np.random.default_rng(0)
    rows = []
    for n in SIZES:
        X = rng.standard_normal(n)
        np.testing.assert_array_equal(ours(X)(), np.ones(n))
        np.testing.assert_array_equal(rules_by_hand(X)(), np.ones(n))
        repeats = 15 if n <= 10_000 else 5
        # the tape, the rules by hand and PyTorch interleaved, repeat by repeat
        methods = {"tape": ours(X), "rules by hand": rules_by_hand(X)}
        if torch:
            methods["PyTorch"] = torch_grad(X)
            np.testing.assert_allclose(np.asarray(methods["PyTorch"]()), np.ones(n))
        timings = _common.compare(methods, "tape", repeats=repeats, number=1, warmup=1)
        row = {name: t.seconds for name, t in timings.items()}
        row |= {"n": n, "memory": memory(X)}
        if torch:
            tape, theirs = timings["tape"].samples, timings["PyTorch"].samples
            row["tape ÷ PyTorch"] = statistics.median(a / b for a, b in zip(tape, theirs))
        peers = {}
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
    return _table(rows, jit, (load_before, os.getloadavg()[0]), threads)


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


def _table(rows, jit, load, threads: str) -> str:
    peers = [p for p in ("PyTorch", "autograd", "JAX (eager)") if any(p in r for r in rows)]
    lines = [
        "# Tape engine: seed 004's mysum",
        "",
        f"Python {platform.python_version()}, NumPy {np.__version__}, {_common.version_of('torch')}, "
        f"{_common.version_of('autograd')}, {_common.version_of('jax')}; {os.cpu_count()} cores, shared machine "
        f"(load average {load[0]:.1f} at the start of the run, {load[1]:.1f} at the end); {threads}. "
        "`gradient(mysum, X)` for `mysum(X)`: `total += X[i]` over `range(len(X))`. Process CPU time, "
        "medians over repeats (`benchmarks/_common.compare`, the cyclic collector paused while a method is "
        "timed): the tape, the same rules by hand and PyTorch interleaved repeat by repeat (15 repeats up to "
        "n = 1e4, 5 at 1e5); autograd fewer repeats on its own; JAX eager once by the wall clock, after a "
        "warm-up at n = 10 that compiles its primitives. All in one run. Every gradient is checked to be all "
        "ones. Target: the tape ≤ 5 ms at n = 1,000, linear to 1e5.",
        "",
        "| n | tape | per loop step | " + " | ".join(peers) + " | tape ÷ PyTorch | tape time ÷ previous n |",
        "|---|---|---|" + "---|" * len(peers) + "---|---|",
    ]
    previous = None
    for row in rows:
        target = ""
        if row["n"] == 1_000:
            target = f" ({'met' if row['tape'] <= 5e-3 else 'missed'})"
        cells = [f"{row['n']:,}", _fmt(row["tape"]) + target, f"{row['tape'] / row['n'] * 1e6:.2f} µs"]
        cells += [_fmt(row.get(p, "not run")) for p in peers]
        cells.append(f"{row['tape ÷ PyTorch']:.2f}" if "tape ÷ PyTorch" in row else "–")
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
    table = main(_common.pin_threads(1))
    _common.write_results("tape_mysum", table)
    print(table)
