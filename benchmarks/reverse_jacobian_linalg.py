"""Jacobians through linear algebra: x -> solve(A, x) and x -> inv(reshape(x)), reverse and forward mode.

Compares, in one run and as ratios to the NumPy analytic Jacobian (``A^{-1}``, and
``-Y[i, k] Y[l, j]`` for ``Y = inv(X)``): chainrules' reverse mode on both engines, whose
pullbacks take the whole block of unit cotangents at once (the rules of ``numpy.linalg`` are
registered ``batched=True``: one solve with the primal's LU factors for every output), the same
pullback called once per output (what reverse mode did before those rules took a batch), forward
mode, and ``jax.jacrev``/``jax.jacfwd`` jit-compiled where JAX is installed. Every contender's
Jacobian is checked against the analytic one before it is timed. Float64 throughout; BLAS pools
of NumPy and SciPy pinned to 1 thread (threadpoolctl), XLA to 1 thread.

Run: ``python benchmarks/reverse_jacobian_linalg.py`` (writes benchmarks/results/reverse_jacobian_linalg.md).
"""

from __future__ import annotations

try:
    from benchmarks import _common as common
except ImportError:  # run as a script: benchmarks/ is on sys.path
    import _common as common

THREADS_NOTE = common.pin_threads(1)  # before JAX is imported

import numpy as np  # noqa: E402

import chainrules as cr  # noqa: E402
from chainrules import api  # noqa: E402
from chainrules.reverse import source  # noqa: E402

SIZES = [10, 50]
#: samples per contender (SLOW_REPEATS where a call takes over 0.2 s), each filling about BUDGET seconds
REPEATS, SLOW_REPEATS, BUDGET = 9, 3, 0.02
OURS = ["reverse (source)", "reverse (tape)", "reverse, one pullback per output", "forward"]
PEERS = ["jax.jacrev jit", "jax.jacfwd jit"]


def _problems(n: int):
    """name -> (f(xp, x) for NumPy or jax.numpy, x, the analytic Jacobian)."""
    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, n)) + np.sqrt(n) * np.eye(n)
    x_solve = rng.standard_normal(n)
    x_inv = (rng.standard_normal((n, n)) + np.sqrt(n) * np.eye(n)).ravel()

    def solve(xp, x):
        return xp.linalg.solve(xp.asarray(a) if xp is not np else a, x)

    def inverse(xp, x):
        return xp.linalg.inv(x.reshape(n, n)).ravel()

    def inverse_jacobian():
        y = np.linalg.inv(x_inv.reshape(n, n))
        return -np.einsum("ik,lj->ijkl", y, y).reshape(n * n, n * n)

    return {
        "solve(A, x)": (solve, x_solve, lambda: np.linalg.inv(a)),
        "inv(x.reshape(n, n)).ravel()": (inverse, x_inv, inverse_jacobian),
    }


def contenders(f, x, analytic) -> dict:
    """name -> zero-argument callable computing the Jacobian; a peer that is not installed is left out."""

    def g(x):
        return f(np, x)

    def one_pullback_per_output():
        y, back = source.pullback_full(g, x)
        return api._reverse_jacobian(x, y, lambda dy: back(dy))  # (the wrapper has no `batched` flag)

    out = {
        "f(x)": lambda: g(x),
        "NumPy analytic": analytic,
        "reverse (source)": lambda: cr.jacobian(g, x, mode="reverse", engine="source"),
        "reverse (tape)": lambda: cr.jacobian(g, x, mode="reverse", engine="tape"),
        "reverse, one pullback per output": one_pullback_per_output,
        "forward": lambda: cr.jacobian(g, x, mode="forward"),
    }
    jax = common.optional_import("jax")
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
        jnp = jax.numpy
        xj = jnp.asarray(x)

        def fj(x):
            return f(jnp, x)

        rev, fwd = jax.jit(jax.jacrev(fj)), jax.jit(jax.jacfwd(fj))
        out["jax.jacrev jit"] = lambda: rev(xj).block_until_ready()
        out["jax.jacfwd jit"] = lambda: fwd(xj).block_until_ready()
    return out


def measure(fns: dict) -> dict[str, common.Timing]:
    slowest = 0.0
    for fn in fns.values():
        start = common.TIMER()
        fn()
        slowest = max(slowest, common.TIMER() - start)
    repeats = REPEATS if slowest < 0.2 else SLOW_REPEATS
    return common.compare(fns, "NumPy analytic", repeats=repeats, warmup=0, budget=BUDGET)


def _fmt_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


NOTES = [
    "- `reverse, one pullback per output` is the source engine's pullback of the same function called "
    "once per output entry (its `batched` flag hidden): what a reverse-mode Jacobian through these rules "
    "cost before their pullbacks took a batch. The batched pullback of `solve` solves all n unit "
    "cotangents with the primal's LU factors in one LAPACK call; that of `inv` is two products of "
    "the inverse with the whole (n², n, n) block.",
    "- The machine is shared (the load average above): ratios come from interleaved repeats, so the load "
    "affects every contender of a row alike.",
    "- At n = 10 a Jacobian costs a few dispatched operations and the seeding and reading of the pass, "
    "a fixed cost several times the analytic Jacobian's handful of NumPy calls; JAX's jit-compiled "
    "Jacobians pay no such cost per call.",
    "- inv at n = 50 is a 2500 × 2500 Jacobian: one pass of 2500 cotangents (or tangents) through "
    "O(n³) products each, the same arithmetic in every mode.",
]


def main() -> str:
    rows = []
    for n in SIZES:
        for name, (f, x, analytic) in _problems(n).items():
            fns = contenders(f, x, analytic)
            expected = analytic()
            for label, fn in fns.items():  # the checks are the warm-up (JAX compiles here)
                if label != "f(x)":
                    np.testing.assert_allclose(np.asarray(fn()), expected, rtol=1e-9, atol=1e-11, err_msg=label)
            t = measure(fns)
            m = np.size(expected) // np.size(x)
            cells = [name, str(n), f"{m}×{np.size(x)}", _fmt_time(t["f(x)"].seconds)]
            cells.append(_fmt_time(t["NumPy analytic"].seconds))
            cells += [f"{t[c].ratio:.2f}×" for c in OURS]
            cells += [f"{t[p].ratio:.2f}×" if p in t else common.NOT_INSTALLED for p in PEERS]
            loop_over_batched = t["reverse, one pullback per output"].seconds / t["reverse (source)"].seconds
            cells.append(f"{loop_over_batched:.1f}×")
            rows.append(cells)
            print(cells, flush=True)
    header = ["function", "n", "Jacobian", "plain f(x)", "NumPy analytic", *OURS, *PEERS, "batched speed-up"]
    method = (
        "Time of one plain evaluation of f and of the NumPy analytic Jacobian, and every contender as a "
        "multiple of the analytic Jacobian (lower is better), measured side by side in one run: process "
        f"CPU time, medians of {REPEATS} interleaved repeats ({SLOW_REPEATS} where a call takes over 0.2 s) "
        f"of samples of about {BUDGET * 1e3:g} ms, ratios the medians of the per-repeat ratios. "
        "`batched speed-up`: the time of one pullback per output over that of the batched pullback "
        "(source engine). float64. Every contender's Jacobian was checked against the analytic one."
    )
    provenance = (
        f"{THREADS_NOTE}.\nPeers: " + common.version_of("jax") + "; `python benchmarks/reverse_jacobian_linalg.py`."
    )
    title = "Reverse- and forward-mode Jacobians through numpy.linalg"
    return common.results_page(title, method, provenance, header, rows, ["## Notes", "", *NOTES])


if __name__ == "__main__":
    common.report("reverse_jacobian_linalg", main())
