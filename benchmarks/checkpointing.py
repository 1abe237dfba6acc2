"""Checkpointing: the gradient of a long explicit integration, with and without ``cr.checkpoint``.

The problem: 400 classical Runge–Kutta steps of a reaction–diffusion equation on a ring of 2000
points, ``du/dt = 0.1 (u[i-1] - 2 u[i] + u[i+1]) + u (1 - u)``; the loss is ``sum(u_T ** 2)`` and
the gradient is with respect to the initial state. Reverse mode keeps every step's intermediates
(about thirty arrays a step); ``cr.checkpoint`` on a segment of 20 steps keeps the 20 segments'
inputs and recomputes one segment at a time in the pullback.

For each of our reverse engines: the time of the gradient (process CPU time, median of interleaved
repeats) and its peak memory (tracemalloc, which sees NumPy's allocations), each checkpointed
figure also as a ratio to the same engine's plain gradient measured in the same run. Peers, where
installed, with their own checkpointing (``jax.checkpoint`` under ``jax.jit``, the segments in a
``lax.scan``, and
``torch.utils.checkpoint.checkpoint`` with ``use_reentrant=False``): time ratios to their own plain
gradient (their memory is allocated outside tracemalloc's view). Every gradient is checked against
ours. Float64; BLAS pools pinned to 1 thread.

Run: ``python benchmarks/checkpointing.py`` (writes benchmarks/results/checkpointing.md).
"""

from __future__ import annotations

try:
    from benchmarks import _common as common
except ImportError:  # run as a script: benchmarks/ is on sys.path
    import _common as common

THREADS_NOTE = common.pin_threads(1)  # before JAX is imported

import numpy as np  # noqa: E402

import chainrules as cr  # noqa: E402

N, STEPS, SEGMENT, DT = 2000, 400, 20, 0.01
REPEATS = 5


def integrator(xp):
    """``(loss(u0, segment), segment, rk4)`` written on the array module ``xp`` (NumPy, jax.numpy, torch)."""

    def rhs(u):
        return 0.1 * (xp.roll(u, 1) - 2.0 * u + xp.roll(u, -1)) + u * (1.0 - u)

    def rk4(u):
        k1 = rhs(u)
        k2 = rhs(u + 0.5 * DT * k1)
        k3 = rhs(u + 0.5 * DT * k2)
        k4 = rhs(u + DT * k3)
        return u + DT / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)

    def segment(u):
        for _ in range(SEGMENT):
            u = rk4(u)
        return u

    def loss(u0, run_segment):
        u = u0
        for _ in range(STEPS // SEGMENT):
            u = run_segment(u)
        return xp.sum(u * u)

    return loss, segment, rk4


def ours(u0) -> dict:
    loss, segment, _ = integrator(np)
    checkpointed = cr.checkpoint(segment)
    out = {}
    for engine in ("source", "tape"):
        out[f"{engine}, plain"] = lambda e=engine: cr.gradient(loss, u0, segment, engine=e)[0]
        out[f"{engine}, checkpoint"] = lambda e=engine: cr.gradient(loss, u0, checkpointed, engine=e)[0]
    return out


def peers(u0) -> dict:
    out = {}
    jax = common.optional_import("jax")
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
        _, _, jax_rk4 = integrator(jax.numpy)

        def jax_segment(u):
            return jax.lax.fori_loop(0, SEGMENT, lambda i, u: jax_rk4(u), u)

        def jax_loss(u0, run_segment):
            # JAX's idiom for loops under jit: fori_loop and scan (XLA compiles an unrolled Python
            # loop of this length for minutes)
            u, _ = jax.lax.scan(lambda u, _: (run_segment(u), None), u0, None, length=STEPS // SEGMENT)
            return jax.numpy.sum(u * u)

        plain = jax.jit(jax.grad(lambda u: jax_loss(u, jax_segment)))
        remat = jax.jit(jax.grad(lambda u: jax_loss(u, jax.checkpoint(jax_segment))))
        uj = jax.numpy.asarray(u0)
        out["JAX jit, plain"] = lambda: np.asarray(plain(uj).block_until_ready())
        out["JAX jit, checkpoint"] = lambda: np.asarray(remat(uj).block_until_ready())
    torch = common.optional_import("torch")
    if torch is not None:
        import torch.utils.checkpoint as torch_checkpoint

        torch_loss, torch_segment, _ = integrator(torch)

        def torch_gradient(run_segment):
            u = torch.from_numpy(u0.copy()).requires_grad_(True)
            (g,) = torch.autograd.grad(torch_loss(u, run_segment), u)
            return g.numpy()

        out["PyTorch, plain"] = lambda: torch_gradient(torch_segment)
        out["PyTorch, checkpoint"] = lambda: torch_gradient(
            lambda u: torch_checkpoint.checkpoint(torch_segment, u, use_reentrant=False)
        )
    return out


def main() -> str:
    u0 = 0.5 + 0.1 * np.random.default_rng(0).standard_normal(N)
    methods = {**ours(u0), **peers(u0)}
    expected = methods["source, plain"]()
    for name, fn in methods.items():
        np.testing.assert_allclose(fn(), expected, rtol=1e-9, atol=1e-12, err_msg=name)
    timings = common.compare(methods, "source, plain", repeats=REPEATS, number=1, warmup=1)
    memory = {name: common.peak_bytes(methods[name]) for name in methods if not name.startswith(("JAX", "PyTorch"))}
    rows = []
    for engine in ("source", "tape", "JAX jit", "PyTorch"):
        plain, checkpointed = f"{engine}, plain", f"{engine}, checkpoint"
        if plain not in timings:
            rows.append([engine, "not installed", "", "", "", "", ""])
            continue
        t_plain, t_ckpt = timings[plain], timings[checkpointed]
        time_ratio = t_ckpt.ratio / t_plain.ratio  # both against the same baseline, repeat by repeat
        if plain in memory:
            mem = [f"{memory[plain] / 1e6:.1f} MB", f"{memory[checkpointed] / 1e6:.1f} MB"]
            mem.append(f"{memory[plain] / memory[checkpointed]:.1f}×")
        else:
            mem = ["not seen by tracemalloc", "", ""]
        rows.append(
            [engine, f"{common.ms(t_plain.seconds)} ms", f"{common.ms(t_ckpt.seconds)} ms", f"{time_ratio:.2f}×"]
        )
        rows[-1] += mem
        print(rows[-1], flush=True)
    header = [
        "engine",
        "gradient",
        "with checkpoint",
        "time, checkpoint ÷ plain",
        "peak memory",
        "with checkpoint",
        "memory, plain ÷ checkpoint",
    ]
    method = (
        f"Gradient of sum(u_T²) after {STEPS} RK4 steps (n = {N}) with respect to u_0; `cr.checkpoint` on "
        f"segments of {SEGMENT} steps. Process CPU time, medians of {REPEATS} interleaved repeats of one call; "
        "the time ratio is the median of the per-repeat ratios. Peak memory by tracemalloc over one call. "
        "Every gradient was checked against ours."
    )
    notes = [
        "## Notes",
        "",
        "- The checkpointed gradient runs each segment twice (once in the primal, once in the pullback), so "
        "its time is at most about the plain gradient's plus one more primal.",
        "- Memory falls with the segment length: the plain gradient keeps every step's intermediates, the "
        "checkpointed one keeps one array per segment plus one segment's intermediates during its pullback.",
        "- JAX and PyTorch allocate outside tracemalloc's view, so only their times are compared.",
    ]
    provenance = f"{THREADS_NOTE}.\n`python benchmarks/checkpointing.py`."
    return common.results_page("Checkpointing a long integration", method, provenance, header, rows, notes)


if __name__ == "__main__":
    common.report("checkpointing", main())
