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

import operator

try:
    from benchmarks import _common as common
except ImportError:  # run as a script: benchmarks/ is on sys.path
    import _common as common

THREADS_NOTE = common.pin_threads(1)

import numpy as np  # noqa: E402

import chainrules as cr  # noqa: E402

RNG = np.random.default_rng(0)
#: n -> repeats of the mysum loops; the value form is quadratic in n (7 s a call at n = 100,000)
REPEATS_LOOPS = {1_000: 15, 10_000: 9, 100_000: 3}


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


def getitem_table(sizes) -> list[str]:
    headers = ["n", "primal loop", "in-place form", "per element", "peak (in-place)", "value form", "per element"]
    headers += ["peak (value)", "value ÷ in-place"]
    rows = []
    for n in sizes:
        X = RNG.standard_normal(n)
        # the checks are the warm-up; the value form, quadratic in n, is checked where it is cheap
        assert np.array_equal(mysum_gradient(X, False), np.ones(n))
        if n <= 10_000:
            assert np.array_equal(mysum_gradient(X, True), np.ones(n))
        methods = {
            "primal": lambda: plain_mysum(X),
            "in-place": lambda: mysum_gradient(X, False),
            "value": lambda: mysum_gradient(X, True),
        }
        repeats = REPEATS_LOOPS[n]
        t = common.compare(methods, "in-place", repeats=repeats, number=1, warmup=0)
        arrays = [common.peak_bytes(methods[name]) / (8 * n) for name in ("in-place", "value")]
        rows.append(
            [
                f"{n:,}",
                f"{t['primal'].seconds * 1e3:.2f} ms",
                f"{t['in-place'].seconds * 1e3:.1f} ms",
                f"{t['in-place'].seconds / n * 1e6:.2f} µs",
                f"{arrays[0]:.2f} arrays",
                f"{t['value'].seconds * 1e3:.0f} ms",
                f"{t['value'].seconds / n * 1e6:.1f} µs",
                f"{arrays[1]:.2f} arrays",
                f"{t['value'].ratio:.1f}×",
            ]
        )
        print(rows[-1], flush=True)
    return common.markdown_table(headers, rows).splitlines()


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
    headers = ["A", "X (accumulator)", "in-place form (BLAS, beta = 1)", "`acc + A.T @ dY`", "`acc += A.T @ dY`"]
    headers += ["`acc + A.T @ dY` ÷ in-place", "peak: in-place", "peak: `acc + A.T @ dY`"]
    rows = []
    for m, k, n, order in cases:
        back, A, dY, acc = matmul_case(m, k, n, order)
        dX = back(dY)[2]
        expected = acc + A.T @ dY
        assert cr.iadd(acc, dX) is acc
        np.testing.assert_allclose(acc, expected, rtol=1e-10, atol=1e-8)

        def numpy_inplace():
            np.add(acc, A.T @ dY, out=acc)

        methods = {"in-place": lambda: cr.iadd(acc, dX), "new": lambda: acc + A.T @ dY, "numpy +=": numpy_inplace}
        repeats = 21 if k * (n or 1) * m < 1e8 else 7
        t = common.compare(methods, "in-place", repeats=repeats, number=1, warmup=1)
        peaks = [common.peak_bytes(methods[name]) for name in ("in-place", "new")]
        shape_x = f"({k},)" if n is None else f"({k}, {n}) {order}"
        rows.append(
            [
                f"({m}, {k})",
                shape_x,
                *(_ms(t[name].seconds) for name in methods),
                f"{t['new'].ratio:.2f}×",
                *(_mb(b) for b in peaks),
            ]
        )
        print(rows[-1], flush=True)
    return common.markdown_table(headers, rows).splitlines()


def _ms(t: float) -> str:
    return f"{t * 1e3:.3f} ms" if t < 0.01 else f"{t * 1e3:.1f} ms"


def _mb(b: int) -> str:
    return f"{b / 1e6:.2f} MB" if b >= 1e4 else f"{b / 1e3:.1f} kB"


def main() -> str:
    getitem_lines = getitem_table(list(REPEATS_LOOPS))
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
        f"{common.machine_line()}; {common.version_of('numpy')}, {common.version_of('scipy')};",
        THREADS_NOTE + ".",
        "Process CPU time, one call per sample, the methods of a row interleaved in one run; times are medians "
        f"over repeats ({', '.join(f'{r} at n = {n:,}' for n, r in REPEATS_LOOPS.items())} for the loops; "
        "7 to 21 for the products), ratios the medians of the per-repeat ratios. Peaks are tracemalloc's, "
        "in a separate call.",
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
    common.report("accumulation", main())
