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

try:
    from benchmarks import _common as common
except ImportError:  # run as a script: benchmarks/ is on sys.path
    import _common as common

THREADS_NOTE = common.pin_threads(1)  # before JAX is imported

import numpy as np  # noqa: E402

import chainrules as cr  # noqa: E402

REPEATS, BUDGET = 9, 0.05
PEER_COLUMNS = ["autograd", "JAX eager", "JAX jit", "PyTorch"]


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
    ("multiply by a number, x * 2.0", np.multiply, (2.0,), {}, lambda m, x, w: x * 2.0, None),
    ("divide by a number, x / 3.0", np.divide, (3.0,), {}, lambda m, x, w: x / 3.0, None),
    ("maximum(x, 0.0)", np.maximum, (0.0,), {}, lambda m, x, w: m.maximum(x, 0.0), None),
    ("power(x, 2.0)", np.power, (2.0,), {}, lambda m, x, w: m.power(x, 2.0), None),
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

    def __getattr__(self, name):
        import torch

        def with_number(f):  # torch's binary functions take tensors: a Python number becomes one
            return lambda a, b: f(a, b if torch.is_tensor(b) else torch.tensor(b, dtype=a.dtype))

        renamed = {
            "clip": torch.clamp,
            "maximum": with_number(torch.maximum),
            "power": torch.pow,
            "max": torch.amax,
            "var": lambda x, axis: torch.var(x, axis, correction=0),
        }
        return renamed.get(name) or getattr(torch, name)


def _ours(f, x, w, extra, kwargs):
    """Our rule's primal and pullback, with the cotangents of the arrays (x, and w where the
    operation takes it) computed: those the peers compute. A number operand's (the 2.0 of
    ``x * 2.0``, clip's bounds) stays the thunk the pullback returns, as in a gradient where it
    is a constant."""
    args = (x,) + tuple(w if a == "w" else a for a in extra)
    arrays = [i for i, a in enumerate(args) if a is x or a is w]
    dy = np.ones(np.shape(f(*args, **kwargs)))

    def run():
        _, back = cr.rrule(f, *args, **kwargs)
        cotangents = back(dy)[1:]
        return [cr.unthunk(cotangents[i]) for i in arrays]

    return run


def _peer(peer, g, x, w, uses_w):
    """The peer's primal and pullback of ``g``, with respect to x (and w where g uses it)."""

    def f(xp, x, w):
        return g(_TorchOps() if xp.__name__ == "torch" else xp, x, w)

    return common.peer_vjp(peer, f, (x, w), argnums=(0, 1) if uses_w else (0,))


def _check(fn, reference) -> str:
    """``"no rule"`` where the peer has none, else a note for its figure: empty, or saying it differs from ours."""
    try:
        got = fn()
    except NotImplementedError:
        return "no rule"
    first = np.asarray(got[0])
    return "" if np.allclose(first, reference, rtol=1e-6, atol=1e-9) else " (wrong: nan/inf)"


def main() -> str:
    rng = np.random.default_rng(0)
    rows = []
    for shape in SHAPES:
        for name, f, extra, kwargs, g, prepare in OPS:
            x = rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)
            if prepare is not None:
                x = prepare(x)
            w = rng.uniform(-1.0, 1.0, (1, shape[1]))
            uses_w = "w" in extra
            plain_args = (x,) + tuple(w if a == "w" else a for a in extra)
            ours = _ours(f, x, w, extra, kwargs)
            reference = ours()[0]
            methods = {
                "numpy": lambda f=f, plain_args=plain_args, kwargs=kwargs: f(*plain_args, **kwargs),
                "ours": ours,
            }
            cells = {}
            for peer in PEER_COLUMNS:
                run = _peer(peer, g, x, w, uses_w)
                cells[peer] = common.NOT_INSTALLED if run is None else _check(run, reference)
                if cells[peer] not in (common.NOT_INSTALLED, "no rule"):
                    methods[peer] = run
            t = common.compare(methods, "numpy", repeats=REPEATS, budget=BUDGET)
            row = [f"{shape[0]}×{shape[1]}", name, f"{t['numpy'].seconds * 1e6:.1f}", f"{t['ours'].ratio:.1f}×"]
            for peer in PEER_COLUMNS:
                row.append(f"{t[peer].ratio:.1f}×{cells[peer]}" if peer in t else cells[peer])
            rows.append(row)
            print(row, flush=True)
    lines = [
        "# Reverse pass through one elementwise or reduction rule",
        "",
        f"{common.machine_line()}; {common.version_of('numpy')};",
        THREADS_NOTE + ".",
        f"Each figure: process CPU time, median over {REPEATS} repeats (samples of about {BUDGET * 1e3:g} ms, "
        "every method of a row interleaved in one run) of the per-repeat ratio of primal plus one pullback "
        "(the cotangents of the array inputs, cotangent of ones made once) to the plain NumPy call. "
        "A number operand's cotangent (clip's bounds, the 2.0 of x * 2.0) is asked of no library; "
        "our pullback returns it as a thunk, not computed; "
        '"wrong" marks a gradient that differs from ours (autograd\'s prod divides by the zero).',
        "Peers: " + ", ".join(common.version_of(name) for name in ("autograd", "jax", "torch")) + ".",
        "",
        common.markdown_table(["size", "operation", "NumPy call (µs)", "ours", *PEER_COLUMNS], rows),
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    common.report("numpy_elementwise_reductions", main())
