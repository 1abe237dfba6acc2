"""The gradient of an MLP loss whose weights come in a dict, beside the same loss of four array arguments.

``loss(params, X, Y)`` reads ``params["W1"]``, ``params["b1"]``, ``params["W2"]``, ``params["b2"]``;
``loss(W1, b1, W2, b2)`` takes them as arguments (the MLP benchmark's loss, softmax cross-entropy).
Both are differentiated by ``cr.gradient`` with the default engine, the dict one with respect to
the dict (a ``Tangent[dict]``). The ratio is dict / arguments: what reading weights out of a
structure costs per gradient. Two models: a small one (batch 4, 8-16-4), where that cost shows,
and the MLP benchmark's (batch 64, 784-256-10), float64 and float32.

Timing: ``_common.compare`` (interleaved repeats, medians, the ratio the median of per-repeat
ratios), one thread.

Run: ``python benchmarks/struct_params.py`` (writes benchmarks/results/struct_params.md);
``--print-only`` prints the table without writing it.
"""

from __future__ import annotations

import sys

try:
    from benchmarks import _common as common
except ImportError:  # run as a script: benchmarks/ is on sys.path
    import _common as common

THREADS_NOTE = common.pin_threads(1)  # before NumPy's first BLAS call

import numpy as np  # noqa: E402

import chainrules as cr  # noqa: E402
from chainrules.testing.zoo.arrays import mlp_loss  # noqa: E402

MODELS = {"small (4, 8-16-4)": (4, 8, 16, 4, 15, 200), "MLP (64, 784-256-10)": (64, 784, 256, 10, 11, 5)}


def make_problem(shape, dtype, seed: int = 0):
    batch, n_in, n_hidden, n_out = shape
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((batch, n_in)).astype(dtype)
    Y = np.eye(n_out, dtype=dtype)[rng.integers(0, n_out, batch)]
    weights = {
        "W1": (rng.standard_normal((n_in, n_hidden)) / np.sqrt(n_in)).astype(dtype),
        "b1": (0.1 * rng.standard_normal(n_hidden)).astype(dtype),
        "W2": (rng.standard_normal((n_hidden, n_out)) / np.sqrt(n_hidden)).astype(dtype),
        "b2": (0.1 * rng.standard_normal(n_out)).astype(dtype),
    }
    return weights, X, Y


def dict_loss(X, Y):
    def loss(params):
        h = np.tanh(X @ params["W1"] + params["b1"])
        z = h @ params["W2"] + params["b2"]
        m = np.max(z, axis=1, keepdims=True)
        log_p = z - (np.log(np.sum(np.exp(z - m), axis=1, keepdims=True)) + m)
        return -np.sum(Y * log_p) / X.shape[0]

    return loss


def measure(shape, dtype, repeats: int, number: int) -> dict:
    weights, X, Y = make_problem(shape, dtype)
    plain, structured = mlp_loss(X, Y), dict_loss(X, Y)
    args = tuple(weights[k] for k in ("W1", "b1", "W2", "b2"))
    got = cr.gradient(structured, weights)[0]
    want = cr.gradient(plain, *args)
    for k, w in zip(("W1", "b1", "W2", "b2"), want):
        np.testing.assert_allclose(got[k], w, rtol=1e-4 if dtype == np.float32 else 1e-10)
    methods = {
        "arguments": lambda: cr.gradient(plain, *args),
        "dict": lambda: cr.gradient(structured, weights),
    }
    return common.compare(methods, "arguments", repeats=repeats, number=number)


def main(argv: list[str]) -> None:
    rows = []
    for label, (*shape, repeats, number) in MODELS.items():
        for dtype in (np.float64, np.float32):
            timings = measure(shape, dtype, repeats, number)
            rows.append(
                [
                    label,
                    np.dtype(dtype).name,
                    f"{timings['arguments'].seconds * 1e6:.0f}",
                    f"{timings['dict'].seconds * 1e6:.0f}",
                    common.ratio(timings["dict"].ratio),
                ]
            )
    text = common.results_page(
        "An MLP's weights in a dict",
        "`cr.gradient` of the MLP loss of a dict of weights beside the same loss of four array arguments "
        "(medians of interleaved repeats, microseconds per gradient; the ratio is the median of per-repeat ratios).",
        f"{THREADS_NOTE}; `python benchmarks/struct_params.py`",
        ["model", "dtype", "arguments (us)", "dict (us)", "dict / arguments"],
        rows,
    )
    if "--print-only" in argv:
        print(text)
    else:
        common.report("struct_params", text)


if __name__ == "__main__":
    main(sys.argv[1:])
