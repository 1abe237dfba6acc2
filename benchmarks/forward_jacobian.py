"""Seed 003's Jacobian benchmark: J of f(x) = (W x + b)**2 for N inputs and M outputs, forward mode.

Compares, in one run and as ratios to the NumPy analytic Jacobian ``2 (W x + b)[:, None] * W``:
chainrules' forward mode (``cr.jacobian(f, x, mode="forward")``), ``jax.jacfwd`` eager and
jit-compiled, ``torch.func.jacfwd`` and autograd's ``jacobian`` where installed. Every peer's
result is checked against the analytic Jacobian before it is timed. Float64 throughout; BLAS
pools of NumPy and SciPy pinned to 1 thread (threadpoolctl), PyTorch and XLA to 1 thread.

Run: ``python benchmarks/forward_jacobian.py`` (writes benchmarks/results/forward_jacobian.md).
"""

from __future__ import annotations

import os

# Single-threaded XLA, set before JAX is imported (the machine is shared; ratios need one thread each).
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import pathlib  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import chainrules as cr  # noqa: E402

SIZES = [(10, 10), (10, 1000), (1000, 10), (100, 100), (1000, 1000)]  # (N inputs, M outputs)
TARGET = 3.0  # ours / analytic, where N <= M


def _problem(n: int, m: int):
    rng = np.random.default_rng(n * 7919 + m)
    return rng.standard_normal((m, n)), rng.standard_normal(m), rng.standard_normal(n)


def contenders(W, b, x):
    """name -> zero-argument callable computing the Jacobian (None where the library is missing)."""

    def analytic():
        return 2 * (W @ x + b)[:, None] * W

    def f(x):
        return (W @ x + b) ** 2

    out = {
        "f(x)": lambda: f(x),
        "NumPy analytic": analytic,
        "chainrules forward": lambda: cr.jacobian(f, x, mode="forward"),
    }
    try:
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
        Wj, bj, xj = jnp.asarray(W), jnp.asarray(b), jnp.asarray(x)

        def fj(x):
            return (Wj @ x + bj) ** 2

        eager = jax.jacfwd(fj)
        jitted = jax.jit(jax.jacfwd(fj))
        out["jax.jacfwd eager"] = lambda: eager(xj).block_until_ready()
        out["jax.jacfwd jit"] = lambda: jitted(xj).block_until_ready()
    except ImportError:
        out["jax.jacfwd eager"] = out["jax.jacfwd jit"] = None
    try:
        import torch
        import torch.func

        torch.set_num_threads(1)
        Wt, bt, xt = (torch.from_numpy(a) for a in (W, b, x))
        jt = torch.func.jacfwd(lambda x: (Wt @ x + bt) ** 2)
        out["torch.func.jacfwd"] = lambda: jt(xt)
    except ImportError:
        out["torch.func.jacfwd"] = None
    try:
        import autograd
        import autograd.numpy as anp

        ja = autograd.jacobian(lambda x: (anp.dot(W, x) + b) ** 2)
        out["autograd.jacobian"] = lambda: ja(x)
    except ImportError:
        out["autograd.jacobian"] = None
    return out


def _time_once(fn, number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def measure(fns: dict, budget: float = 0.02) -> dict:
    """Median seconds per call of each contender; repeats are interleaved so that the load of a
    shared machine hits all of them alike."""
    numbers, samples = {}, {}
    for name, fn in fns.items():
        fn()  # warm up (JAX compiles here)
        once = min(_time_once(fn, 1) for _ in range(3))
        numbers[name] = max(1, int(budget / max(once, 1e-7)))
        samples[name] = []
    repeats = 15 if max(_time_once(fn, 1) for fn in fns.values()) < 0.3 else 3
    for _ in range(repeats):
        for name, fn in fns.items():
            samples[name].append(_time_once(fn, numbers[name]))
    return {name: statistics.median(s) for name, s in samples.items()}


def _fmt_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def main() -> str:
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    load = os.getloadavg()[0]
    peers = ["jax.jacfwd eager", "jax.jacfwd jit", "torch.func.jacfwd", "autograd.jacobian"]
    rows, verdicts = [], []
    for n, m in SIZES:
        W, b, x = _problem(n, m)
        fns = contenders(W, b, x)
        expected = fns["NumPy analytic"]()
        available = {}
        for name, fn in fns.items():
            if fn is None:
                continue
            if name != "f(x)":
                np.testing.assert_allclose(np.asarray(fn()), expected, rtol=1e-10, atol=1e-10, err_msg=name)
            available[name] = fn
        times = measure(available)
        base = times["NumPy analytic"]
        ours = times["chainrules forward"] / base
        cells = [f"{n}×{m}", _fmt_time(times["f(x)"]), _fmt_time(base), f"{ours:.2f}×"]
        for p in peers:
            cells.append(f"{times[p] / base:.1f}×" if p in times else "not installed")
        rows.append("| " + " | ".join(cells) + " |")
        eager = [times[p] / base for p in ("jax.jacfwd eager", "torch.func.jacfwd", "autograd.jacobian") if p in times]
        if n <= m:
            ok = ours <= TARGET
            verdicts.append(
                f"- {n}×{m} (N ≤ M): ours {ours:.2f}× the analytic Jacobian, target ≤ {TARGET:g}×: "
                f"**{'met' if ok else 'missed'}**"
            )
        ahead = all(ours < e for e in eager)
        verdicts.append(
            f"- {n}×{m}: ahead of every peer's eager mode ({', '.join(f'{e:.0f}×' for e in eager)}): "
            f"**{'met' if ahead else 'missed'}**"
        )
    header = ["N×M (inputs×outputs)", "plain f(x)", "NumPy analytic", "chainrules forward", *peers]
    import numpy

    lines = [
        "# Forward-mode Jacobian of (W x + b)²",
        "",
        "Time of one plain evaluation of f and of the NumPy analytic Jacobian `2 (W x + b)[:, None] * W`, "
        "and every contender as a multiple of the analytic Jacobian (lower is better), measured side by side "
        "in one run; medians of 15 interleaved repeats (3 where a call takes over 0.3 s). "
        "float64; NumPy/SciPy BLAS pinned to 1 thread with threadpoolctl, PyTorch `set_num_threads(1)`, "
        "XLA single-threaded. Every contender's Jacobian was checked against the analytic one.",
        f"Python {platform.python_version()}, NumPy {numpy.__version__}, {platform.machine()}; "
        f"`python benchmarks/forward_jacobian.py`.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *rows,
        "",
        "## Targets",
        "",
        *verdicts,
        "",
        "## Notes",
        "",
        f"- Load average of the shared 2-core machine when the run started: {load:.1f} (the ratios come from "
        "interleaved repeats, so the load affects every contender of a row alike, but it inflates "
        "Python-level overhead more than NumPy's arithmetic).",
        "- Where ours misses 3×, the time is a fixed cost, not arithmetic: three dispatched operations "
        "(`W @ x`, `+ b`, `** 2`), each one rule lookup and one `frule` call with its bookkeeping, plus "
        "the seeding and reading of the pass. At 10×10 the analytic Jacobian is a handful of NumPy "
        "calls, so any per-operation interpretation is several times it.",
        "- At 1000×1000 the seed is a `BasisSeed` (a block of unit tangents that knows it is one): "
        "`W @ seed` is a row selection of `W`, not a 10⁹-flop product, and the Jacobian costs what the "
        "analytic one does. Peers push a dense identity basis through the product.",
        "- Chunk size: all N inputs in one pass up to N = 2048 (the seed block N·chunk ≤ 2²² numbers), "
        "so every row here is one pass.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    table = main()
    out = pathlib.Path(__file__).parent / "results" / "forward_jacobian.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(table)
    print(table)
    sys.exit(0)
