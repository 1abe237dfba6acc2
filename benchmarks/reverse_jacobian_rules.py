"""Reverse-mode Jacobians through the batched array rules: softmax of a layer, and scans joined.

``cr.jacobian(f, x, mode="reverse")`` pulls a whole block of unit cotangents back at once when
every rule on the way takes a batch (a leading batch axis); these two functions reach ``np.max``
(keepdims), ``np.sum``, ``np.cumsum``, ``np.cumprod``, ``np.append`` and ``np.linalg.norm``. In
one run, as multiples of ours (the default source engine): the tape engine, the same source
engine's pullback called once per output (what a function with one unbatched rule costs),
forward mode, and ``jax.jacrev`` jit-compiled. Every Jacobian is checked against ours first.
Float64, n = 100 inputs and 100 outputs; BLAS pools of NumPy and SciPy pinned to 1 thread
(threadpoolctl), XLA to 1 thread.

Run: ``python benchmarks/reverse_jacobian_rules.py`` (writes benchmarks/results/reverse_jacobian_rules.md).
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

N = 100
REPEATS, BUDGET = 11, 0.05
OURS = "chainrules reverse (source)"
OTHERS = ["chainrules reverse (tape)", "source, one pullback per output", "chainrules forward", "jax.jacrev jit"]


def problems():
    """name -> (f written for an array namespace ``xp``, x)."""
    rng = np.random.default_rng(5)
    W = rng.standard_normal((N, N)) / np.sqrt(N)
    V = rng.standard_normal((N // 2, N)) / np.sqrt(N)
    x = rng.standard_normal(N)

    def softmax(xp, x):
        z = W @ x
        e = xp.exp(z - xp.max(z, axis=-1, keepdims=True))
        return e / xp.sum(e, axis=-1, keepdims=True)

    def scans_joined(xp, x):
        z = xp.tanh(V @ x)
        return xp.append(xp.cumsum(z), xp.cumprod(1.0 + 0.1 * z)) / xp.linalg.norm(x)

    return {"softmax(W x)": (softmax, x), "append(cumsum, cumprod) / norm": (scans_joined, x)}


def contenders(g, x):
    """name -> zero-argument callable computing the Jacobian; JAX is left out when not installed."""

    def f(x):
        return g(np, x)

    def one_pullback_per_output():
        y, back = source.pullback_full(f, x)
        return api._reverse_jacobian(x, y, lambda dy: back(dy))  # (a plain function: no batched flag)

    out = {
        "f(x)": lambda: f(x),
        OURS: lambda: cr.jacobian(f, x, mode="reverse"),
        "chainrules reverse (tape)": lambda: cr.jacobian(f, x, mode="reverse", engine="tape"),
        "source, one pullback per output": one_pullback_per_output,
        "chainrules forward": lambda: cr.jacobian(f, x, mode="forward"),
    }
    jax = common.optional_import("jax")
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
        jnp = jax.numpy
        jitted = jax.jit(jax.jacrev(lambda x: g(jnp, x)))
        xj = jnp.asarray(x)
        out["jax.jacrev jit"] = lambda: jitted(xj).block_until_ready()
    return out


#: what the table does not say by itself
NOTES = [
    "- With as many outputs as inputs, auto mode would pick reverse mode here; forward mode is still "
    "faster at this size: its block of unit tangents reaches `W @ x` first, where it is a selection of "
    "`W`'s columns (a `BasisSeed`), while reverse mode's block reaches `W @ x` last, dense after softmax or the "
    "scans, and pays the (100×100)·(100×100) product that JAX's jacrev pays too.",
    "- 'one pullback per output' is what these functions cost before their rules took a batch: the "
    "engine swept once per output row.",
]


def main() -> str:
    rows = []
    batched = []
    for name, (g, x) in problems().items():
        fns = contenders(g, x)
        _, back = source.pullback_full(lambda x: g(np, x), x)
        batched.append(f"- {name}: the source engine's pullback is batched: **{getattr(back, 'batched', False)}**")
        expected = fns[OURS]()
        for label, fn in fns.items():  # the checks are the warm-up (JAX compiles here)
            if label != "f(x)":
                np.testing.assert_allclose(np.asarray(fn()), expected, rtol=1e-10, atol=1e-12, err_msg=label)
        t = common.compare(fns, OURS, repeats=REPEATS, warmup=0, budget=BUDGET)
        cells = [name, f"{common.ms(t['f(x)'].seconds)} ms", f"{common.ms(t[OURS].seconds)} ms"]
        cells += [f"{t[o].ratio:.2f}×" if o in t else common.NOT_INSTALLED for o in OTHERS]
        rows.append(cells)
        print(cells, flush=True)
    header = ["f (n = 100 → 100)", "plain f(x)", OURS, *(f"{o} ÷ ours" for o in OTHERS)]
    method = (
        "Time of one plain evaluation of f and of our reverse-mode Jacobian (default engine), and every other "
        "contender as a multiple of ours (higher: ours is faster), measured side by side in one run: process "
        f"CPU time, medians of {REPEATS} interleaved repeats of samples of about {BUDGET * 1e3:g} ms, ratios the "
        "medians of the per-repeat ratios. float64. Every contender's Jacobian was checked against ours. "
        "'source, one pullback per output' is the same source-engine pullback called once per output row "
        "(the path a function takes when one rule on the way does not take a batch)."
    )
    provenance = (
        f"{THREADS_NOTE}.\nPeers: " + common.version_of("jax") + "; `python benchmarks/reverse_jacobian_rules.py`."
    )
    title = "Reverse-mode Jacobians through the batched array rules"
    return common.results_page(title, method, provenance, header, rows, batched, ["## Notes", "", *NOTES])


if __name__ == "__main__":
    common.report("reverse_jacobian_rules", main())
