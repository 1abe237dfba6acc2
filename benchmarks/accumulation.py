"""Gradient accumulation (seed 004): in-place forms of cotangents against their values.

1. ``total += X[i]`` for i in range(n) (seed 004's ``mysum``): the cotangents of ``X[i]`` are
   accumulated into one array with ``cr.accumulate``, as an engine does, either as the
   ``InplaceableThunk``s the getitem rule returns (in-place form: ``acc[i] += dy``) or as dense
   arrays (value form: each cotangent unthunked first). Time and tracemalloc peak memory.
2. The cotangent ``A.T @ dY`` of ``X`` in ``Y = A @ X`` added into an owned accumulator: the
   rule's in-place form (one BLAS gemm/gemv with beta = 1 into the accumulator), NumPy's
   ``acc + A.T @ dY`` (a new product and a new sum) and ``acc += A.T @ dY`` (a new product).

Both BLAS libraries (NumPy's and SciPy's OpenBLAS) are pinned to one thread with threadpoolctl.

Run: ``python benchmarks/accumulation.py`` (writes benchmarks/results/accumulation.md).
"""

from __future__ import annotations

import gc
import operator
import pathlib
import platform
import statistics
import time
import tracemalloc

import numpy as np
import scipy
from threadpoolctl import threadpool_limits

import chainrules as cr

RNG = np.random.default_rng(0)


# ----- 1. the cotangents of X[i] ---------------------------------------------------------------


def mysum_gradient(X, value_form: bool):
    """Accumulate the cotangent of every ``X[i]`` (seed 004's ``mysum``) as an engine would."""
    acc, owned = cr.ZeroTangent(), False
    getitem = operator.getitem
    for i in range(X.shape[0]):
        _, back = cr.rrule(getitem, X, i)
        dx = back(1.0)[1]
        if value_form:
            dx = cr.unthunk(dx)
        acc, owned = cr.accumulate(acc, owned, dx)
    return cr.unthunk(acc)


def plain_mysum(X):
    total = 0.0
    for i in range(X.shape[0]):
        total += X[i]
    return total


def timed(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def peak_bytes(fn) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def getitem_table(sizes) -> list[str]:
    lines = [
        "| n | primal loop | in-place form | per element | peak (in-place) | value form | per element"
        " | peak (value) | value ÷ in-place |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for n in sizes:
        X = RNG.standard_normal(n)
        assert np.array_equal(mysum_gradient(X, False), np.ones(n))
        assert np.array_equal(mysum_gradient(X, True), np.ones(n))
        floats = 8 * n
        repeats = 15 if n <= 10_000 else 5
        t_plain = timed(lambda: plain_mysum(X), repeats)
        t_in = timed(lambda: mysum_gradient(X, False), repeats)
        t_val = timed(lambda: mysum_gradient(X, True), repeats if n <= 10_000 else 1)
        p_in = peak_bytes(lambda: mysum_gradient(X, False))
        p_val = peak_bytes(lambda: mysum_gradient(X, True))
        lines.append(
            f"| {n:,} | {t_plain * 1e3:.2f} ms | {t_in * 1e3:.1f} ms | {t_in / n * 1e6:.2f} µs"
            f" | {p_in / floats:.2f} arrays | {t_val * 1e3:.0f} ms | {t_val / n * 1e6:.1f} µs"
            f" | {p_val / floats:.2f} arrays | {t_val / t_in:.0f}× |"
        )
        print(lines[-1], flush=True)
    return lines


# ----- 2. the cotangent of X in Y = A @ X -------------------------------------------------------


def matmul_case(m: int, k: int, n: int | None, order: str):
    """``Y = A @ X`` with A (m, k) and X (k, n) (a vector (k,) when n is None); returns the rule's
    cotangent of X for a random dY, an owned accumulator, and the operands."""
    A = RNG.standard_normal((m, k))
    X = RNG.standard_normal((k,) if n is None else (k, n))
    dY = RNG.standard_normal((m,) if n is None else (m, n))
    _, back = cr.rrule(np.matmul, A, X)
    acc = np.asarray(RNG.standard_normal(X.shape), order=order)
    return back, A, dY, acc


def matmul_table(cases) -> list[str]:
    lines = [
        "| A | X (accumulator) | in-place form (BLAS, beta = 1) | `acc + A.T @ dY` | `acc += A.T @ dY`"
        " | NumPy ÷ in-place | peak: in-place | peak: `acc + A.T @ dY` |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for m, k, n, order in cases:
        back, A, dY, acc = matmul_case(m, k, n, order)
        dX = back(dY)[2]
        expected = acc + A.T @ dY
        assert cr.iadd(acc, dX) is acc
        np.testing.assert_allclose(acc, expected, rtol=1e-10, atol=1e-8)
        repeats = 21 if k * (n or 1) * m < 1e8 else 7
        t_in = timed(lambda: cr.iadd(acc, dX), repeats)
        t_new = timed(lambda: acc + A.T @ dY, repeats)

        def numpy_inplace():
            np.add(acc, A.T @ dY, out=acc)

        t_inc = timed(numpy_inplace, repeats)
        p_in = peak_bytes(lambda: cr.iadd(acc, dX))
        p_new = peak_bytes(lambda: acc + A.T @ dY)
        shape_x = f"({k},)" if n is None else f"({k}, {n}) {order}"
        lines.append(
            f"| ({m}, {k}) | {shape_x} | {_ms(t_in)} | {_ms(t_new)} | {_ms(t_inc)} | {t_new / t_in:.2f}×"
            f" | {_mb(p_in)} | {_mb(p_new)} |"
        )
        print(lines[-1], flush=True)
    return lines


def _ms(t: float) -> str:
    return f"{t * 1e3:.3f} ms" if t < 0.01 else f"{t * 1e3:.1f} ms"


def _mb(b: int) -> str:
    return f"{b / 1e6:.2f} MB" if b >= 1e4 else f"{b / 1e3:.1f} kB"


def main() -> str:
    with threadpool_limits(limits=1):
        getitem_lines = getitem_table([1_000, 10_000, 100_000])
        matmul_lines = matmul_table(
            [
                (100, 100, 100, "C"),
                (500, 500, 500, "C"),
                (1000, 1000, 1000, "F"),
                (16, 2000, 2000, "C"),
                (2000, 2000, None, "C"),
                (1, 3000, 3000, "C"),
            ]
        )
    header = [
        "# Gradient accumulation: in-place forms against values",
        "",
        f"Python {platform.python_version()}, NumPy {np.__version__}, SciPy {scipy.__version__}, "
        f"{platform.machine()}; both OpenBLAS thread pools (NumPy's and SciPy's) pinned to 1 thread "
        "with threadpoolctl. Times are medians over repeats (15 for the loops up to n = 10,000, 5 above, and a "
        "single run of the value form at n = 100,000; 7 to 21 for the products); peaks are tracemalloc's, in a "
        "separate run. The machine is shared (2 cores): compare figures within a row.",
        "",
        "## Accumulating the cotangents of `X[i]`, i in range(n) (seed 004's `mysum`)",
        "",
        "The getitem rule's pullback is called for each `i` and its cotangent accumulated with "
        "`cr.accumulate`, as an engine does. *In-place form*: the `InplaceableThunk` adds `dy` into "
        "`acc[i]`; the first two contributions build one dense value and its owned copy. *Value form*: "
        "each cotangent is unthunked into a dense array of n floats first. *Primal loop*: "
        "`total += X[i]` in plain Python, for scale. Peak memory is in arrays of n float64 "
        "(8n bytes).",
        "",
        *getitem_lines,
        "",
        "## Accumulating the cotangent `A.T @ dY` of X in `Y = A @ X`",
        "",
        "The matmul rule's cotangent of X added into an owned accumulator. *In-place form*: "
        "`cr.iadd(acc, dX)` runs one SciPy BLAS gemm (gemv for a vector, with beta = 1) writing "
        "into `acc`; C-ordered accumulators are handled as their Fortran-ordered transpose. "
        "The NumPy columns allocate the product (and, for `acc + ...`, the sum). The peak is the "
        "memory allocated during one accumulation.",
        "",
        *matmul_lines,
    ]
    return "\n".join(header) + "\n"


if __name__ == "__main__":
    table = main()
    out = pathlib.Path(__file__).parent / "results" / "accumulation.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(table)
    print(table)
