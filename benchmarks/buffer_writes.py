"""Writes into a buffer in a Python loop: the gradient of ``out[i] = x[i] * x[i]`` for ``i < n``.

Users fill arrays by index all the time (``out = np.zeros_like(x)``, then ``out[i] = ...``). Each
write replaces part of the array, so a reverse pass must hand each written value only the
cotangent of what it wrote and nothing of what a later write overwrote. Done naively (a copy of
the buffer per write, or a dense cotangent per write) that costs O(n) per write and O(n²) in
all. This measures the cost per write with each reverse engine as n doubles: the time divided
by the previous n's should stay near 2 (linear), beside the plain primal and PyTorch (in-place
``out[i] = ...`` on a tensor that requires grad) where installed.

Run: ``python benchmarks/buffer_writes.py`` (writes benchmarks/results/buffer_writes.md).
"""

from __future__ import annotations

try:
    from benchmarks import _common as common
except ImportError:  # run as a script: benchmarks/ is on sys.path
    import _common as common

THREADS_NOTE = common.pin_threads(1)

import numpy as np  # noqa: E402

import chainrules as cr  # noqa: E402

torch = common.optional_import("torch")

SIZES = (1_000, 2_000, 4_000, 8_000)
ENGINES = ("source", "tape")


def fill(x):
    out = np.zeros_like(x)
    for i in range(len(x)):
        out[i] = x[i] * x[i]
    return np.sum(out)


def torch_fill(x):
    leaf = torch.tensor(x, requires_grad=True)
    out = torch.zeros_like(leaf)
    for i in range(len(x)):
        out[i] = leaf[i] * leaf[i]
    return torch.autograd.grad(out.sum(), leaf)[0]


def methods_for(x) -> dict:
    methods = {"plain fill(x)": lambda: fill(x)}
    for engine in ENGINES:
        np.testing.assert_allclose(cr.gradient(fill, x, engine=engine)[0], 2 * x, rtol=1e-12)
        methods[f"ours, engine={engine!r}"] = lambda engine=engine: cr.gradient(fill, x, engine=engine)
    if torch is not None:
        np.testing.assert_allclose(torch_fill(x).numpy(), 2 * x, rtol=1e-12)
        methods["PyTorch"] = lambda: torch_fill(x)
    return methods


def main() -> str:
    rng = np.random.default_rng(0)
    names, rows, previous = None, [], {}
    for n in SIZES:
        x = rng.standard_normal(n)
        methods = methods_for(x)
        names = list(methods)
        timings = common.compare(methods, "plain fill(x)", repeats=7, number=1, warmup=1)
        row = [f"{n:,}"]
        for name in names:
            seconds = timings[name].seconds
            growth = f", ×{seconds / previous[name]:.2f}" if name in previous else ""
            per_write = f"{seconds / n * 1e6:.1f} µs per write"
            row.append(f"{common.ms(seconds)} ms ({per_write}{growth})")
            previous[name] = seconds
        row += [common.ratio(timings[f"ours, engine={engine!r}"].ratio) for engine in ENGINES]
        rows.append(row)
    header = ["n", *names, *(f"{engine} ÷ plain" for engine in ENGINES)]
    method = (
        "`cr.gradient(fill, x, engine=...)` for `fill(x)`: `out = np.zeros_like(x)`, then `out[i] = x[i] * x[i]` "
        "for every i, returning `np.sum(out)`; every gradient checked against 2x. Process CPU time, medians of 7 "
        "interleaved repeats of one call (`benchmarks/_common.compare`); each cell: ms per call, µs per write, "
        "and ×(time ÷ the time at the previous n): 2 for a linear cost, 4 for a quadratic one."
    )
    peers = common.version_of("torch")
    return common.results_page(
        "Writes into a buffer in a Python loop",
        method,
        f"{THREADS_NOTE}; {peers}; `python benchmarks/buffer_writes.py`.",
        header,
        rows,
    )


if __name__ == "__main__":
    common.report("buffer_writes", main())
