"""Cost of a reverse pass through one NumPy elementwise or reduction rule, against the peers.

For each operation and size: the time of the plain NumPy call, and the time of primal plus
pullback (one cotangent) for our ``rrule`` and for HIPS autograd (``make_vjp``), JAX (``jax.vjp``,
eager and ``jit``) and PyTorch (``torch.autograd.grad``), each as a ratio to the plain NumPy call
measured in the same run. Every library runs on one thread (NumPy's and SciPy's OpenBLAS pinned
with threadpoolctl, ``torch.set_num_threads(1)``, XLA's CPU client with one thread).

Run: ``python benchmarks/numpy_elementwise_reductions.py`` (writes
benchmarks/results/numpy_elementwise_reductions.md).
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import pathlib  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import timeit  # noqa: E402

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

import chainrules as cr  # noqa: E402

try:
    import autograd
    import autograd.numpy as anp
except ImportError:  # optional peer
    autograd = None
try:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
except ImportError:
    jax = None
try:
    import torch

    torch.set_num_threads(1)
except ImportError:
    torch = None


def _with_zero_per_column(x):
    x = x.copy()
    x[0, :] = 0.0
    return x


# name, ours (function, extra args, kwargs), per-library function of (x, w), data maker
OPS = [
    ("exp", np.exp, (), {}, lambda m, x, w: m.exp(x), None),
    ("multiply, (n,m)*(1,m)", np.multiply, ("w",), {}, lambda m, x, w: x * w, None),
    ("maximum, (n,m) vs (1,m)", np.maximum, ("w",), {}, lambda m, x, w: m.maximum(x, w), None),
    ("logaddexp, (n,m) vs (1,m)", np.logaddexp, ("w",), {}, lambda m, x, w: m.logaddexp(x, w), None),
    ("clip(x, -0.5, 0.5)", np.clip, (-0.5, 0.5), {}, lambda m, x, w: m.clip(x, -0.5, 0.5), None),
    ("sum(axis=0)", np.sum, (), {"axis": 0}, lambda m, x, w: m.sum(x, 0), None),
    ("max(axis=0)", np.max, (), {"axis": 0}, lambda m, x, w: m.max(x, 0), None),
    ("var(axis=0)", np.var, (), {"axis": 0}, lambda m, x, w: m.var(x, 0), None),
    ("prod(axis=0)", np.prod, (), {"axis": 0}, lambda m, x, w: m.prod(x, 0), None),
    ("prod(axis=0), a zero per column", np.prod, (), {"axis": 0}, lambda m, x, w: m.prod(x, 0), _with_zero_per_column),
    ("cumsum(axis=0)", np.cumsum, (), {"axis": 0}, lambda m, x, w: m.cumsum(x, 0), None),
    ("cumprod(axis=0)", np.cumprod, (), {"axis": 0}, lambda m, x, w: m.cumprod(x, 0), None),
]

SHAPES = [(100, 10), (1000, 1000)]


class _TorchOps:
    """The NumPy-like names the table uses, on torch tensors."""

    exp = staticmethod(lambda x: torch.exp(x))
    maximum = staticmethod(lambda x, w: torch.maximum(x, w))
    logaddexp = staticmethod(lambda x, w: torch.logaddexp(x, w))
    clip = staticmethod(lambda x, lo, hi: torch.clamp(x, lo, hi))
    sum = staticmethod(lambda x, axis: torch.sum(x, axis))
    max = staticmethod(lambda x, axis: torch.amax(x, axis))
    var = staticmethod(lambda x, axis: torch.var(x, axis, correction=0))
    prod = staticmethod(lambda x, axis: torch.prod(x, axis))
    cumsum = staticmethod(lambda x, axis: torch.cumsum(x, axis))
    cumprod = staticmethod(lambda x, axis: torch.cumprod(x, axis))


def _median_seconds(fn, budget=0.2, repeats=7) -> float:
    fn()  # warm up (and compile, for jit)
    timer = timeit.Timer(fn)
    number, elapsed = timer.autorange()
    number = max(1, int(number * budget / max(elapsed, 1e-9)))
    return statistics.median(timer.repeat(repeat=repeats, number=number)) / number


def _ours(f, x, w, extra, kwargs):
    args = (x,) + tuple(w if a == "w" else a for a in extra)

    def run():
        y, back = cr.rrule(f, *args, **kwargs)
        return [cr.unthunk(c) for c in back(np.ones(np.shape(y)))[1:]]

    return run


def _autograd(g, x, w, uses_w):
    if autograd is None:
        return None
    argnums = (0, 1) if uses_w else 0

    def run():
        vjp, y = autograd.make_vjp(lambda a, b: g(anp, a, b), argnums)(x, w)
        return vjp(np.ones(np.shape(y)))

    return run


def _jax(g, x, w, uses_w, jit):
    if jax is None:
        return None
    xj, wj = jnp.asarray(x), jnp.asarray(w)

    if uses_w:

        def reverse(a, b):
            y, vjp = jax.vjp(lambda a, b: g(jnp, a, b), a, b)
            return vjp(jnp.ones_like(y))

    else:

        def reverse(a, b):
            y, vjp = jax.vjp(lambda a: g(jnp, a, b), a)
            return vjp(jnp.ones_like(y))

    fn = jax.jit(reverse) if jit else reverse
    return lambda: jax.block_until_ready(fn(xj, wj))


def _torch(g, x, w, uses_w):
    if torch is None:
        return None
    xt = torch.tensor(x, requires_grad=True)
    wt = torch.tensor(w, requires_grad=uses_w)
    inputs = (xt, wt) if uses_w else (xt,)

    def run():
        y = g(_TorchOps, xt, wt)
        return torch.autograd.grad(y, inputs, torch.ones_like(y))

    return run


def _ratio(fn, base, reference) -> str:
    """The time of ``fn`` over ``base``, flagged when its gradient differs from ours (or it has none)."""
    if fn is None:
        return "not installed"
    try:
        got = fn()
    except NotImplementedError:
        return "no rule"
    first = got[0] if isinstance(got, (tuple, list)) else got
    first = np.asarray(first.detach() if hasattr(first, "detach") else first)
    note = "" if np.allclose(first, reference, rtol=1e-6, atol=1e-9) else " (wrong: nan/inf)"
    return f"{_median_seconds(fn) / base:.1f}×{note}"


def _version(module) -> str:
    return getattr(module, "__version__", "installed") if module is not None else "not installed"


def main() -> str:
    rng = np.random.default_rng(0)
    rows = []
    with threadpool_limits(limits=1):
        for shape in SHAPES:
            for name, f, extra, kwargs, g, prepare in OPS:
                x = rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)
                if prepare is not None:
                    x = prepare(x)
                w = rng.uniform(-1.0, 1.0, (1, shape[1]))
                uses_w = "w" in extra
                plain_args = (x,) + tuple(w if a == "w" else a for a in extra)
                base = _median_seconds(lambda: f(*plain_args, **kwargs))
                ours = _ours(f, x, w, extra, kwargs)
                reference = ours()[0]
                rows.append(
                    (
                        f"{shape[0]}×{shape[1]}",
                        name,
                        f"{base * 1e6:.1f}",
                        _ratio(ours, base, reference),
                        _ratio(_autograd(g, x, w, uses_w), base, reference),
                        _ratio(_jax(g, x, w, uses_w, jit=False), base, reference),
                        _ratio(_jax(g, x, w, uses_w, jit=True), base, reference),
                        _ratio(_torch(g, x, w, uses_w), base, reference),
                    )
                )
    lines = [
        "# Reverse pass through one elementwise or reduction rule",
        "",
        f"Python {platform.python_version()}, NumPy {np.__version__}, {platform.machine()}, one thread everywhere "
        "(threadpoolctl limits NumPy's/SciPy's BLAS to 1; torch.set_num_threads(1); XLA with one intra-op thread).",
        "Each figure: median of 7 repeats, primal plus one pullback (all differentiable inputs), "
        "as a multiple of the plain NumPy call measured in the same run. "
        "Ours also returns the cotangents of clip's bounds (given positionally); "
        '"wrong" marks a gradient that differs from ours (autograd\'s prod divides by the zero).',
        f"The machine is shared (2 cores; load average {os.getloadavg()[0]:.1f} at the end of the run): "
        "compare ratios within a row.",
        f"Peers: autograd {_version(autograd)}, JAX {_version(jax)}, PyTorch {_version(torch)}.",
        "",
        "| size | operation | NumPy call (µs) | ours | autograd | JAX eager | JAX jit | PyTorch |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    table = main()
    out = pathlib.Path(__file__).parent / "results" / "numpy_elementwise_reductions.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(table)
    print(table)
