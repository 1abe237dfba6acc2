"""Matrix products through SciPy's BLAS, and multiply-adds into an accumulator.

``muladd(acc, x, opx, y, opy)`` is seed 004's ``mul!(acc, op(x), op(y), true, true)``: it adds
``op(x) @ op(y)`` into ``acc`` in place with ``gemm``/``gemv``/``ger`` and ``beta = 1``, so the
product is never allocated. ``product(x, opx, y, opy)`` is the same product as a new array. An
``op`` is ``"N"`` (as is), ``"T"`` (transpose), ``"C"`` (conjugate transpose) or ``"R"``
(conjugate only, which BLAS lacks: it is obtained by conjugating the whole update).

NumPy's ``matmul`` and SciPy's BLAS are two OpenBLAS builds. A new product goes through
``np.matmul`` (it hands transposed views to BLAS without copying them): NumPy's build was 10-25%
faster than SciPy's for the products of benchmarks/mlp.py, in float64 and float32, on one
thread. SciPy's is used where only it helps: the multiply-add with ``beta = 1``, which NumPy
lacks, and a product that conjugates an operand (BLAS conjugates as it reads, NumPy would copy).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import blas

_GEMM = {np.dtype(t): getattr(blas, f"{p}gemm") for t, p in (("f4", "s"), ("f8", "d"), ("c8", "c"), ("c16", "z"))}
_GEMV = {np.dtype(t): getattr(blas, f"{p}gemv") for t, p in (("f4", "s"), ("f8", "d"), ("c8", "c"), ("c16", "z"))}
_GER = {np.dtype(t): getattr(blas, n) for t, n in (("f4", "sger"), ("f8", "dger"), ("c8", "cgeru"), ("c16", "zgeru"))}

_CODE = {"N": 0, "T": 1, "C": 2}
# op'(M) == op(M).T
_TRANSPOSED = {"N": "T", "T": "N", "C": "R", "R": "C"}
# op'(M) == conj(op(M))
_CONJUGATED = {"N": "R", "T": "C", "C": "T", "R": "N"}
# for real matrices conjugation is the identity
_REAL = {"N": "N", "T": "T", "C": "T", "R": "N"}
_CONJUGATES = {"N": False, "T": False, "C": True, "R": True}


def blas_dtype(*arrays) -> np.dtype | None:
    """The common dtype when every array is a non-empty 2-D ``np.ndarray`` of one BLAS dtype."""
    dtype = None
    for a in arrays:
        if type(a) is not np.ndarray or a.ndim != 2 or a.size == 0:
            return None
        if dtype is None:
            dtype = a.dtype
        elif a.dtype != dtype:
            return None
    return dtype if dtype in _GEMM else None


def apply_op(m, op: str):
    """``op(m)`` with NumPy (views where possible)."""
    if op == "N":
        return m
    if type(m) is np.ndarray and m.ndim == 2 and m.dtype.kind != "c" and op != "R":
        return m.T  # a real matrix: its transpose, conjugated or not
    if op == "T":
        return np.swapaxes(m, -1, -2)
    if op == "R":
        return np.conj(m) if np.iscomplexobj(m) else m
    return np.swapaxes(np.conj(m) if np.iscomplexobj(m) else m, -1, -2)


def _fortran(m, op):
    """``(m', op')`` with ``op'(m') == op(m)`` and ``m'`` Fortran-contiguous, copying only a strided ``m``."""
    if m.flags.f_contiguous:
        return m, op
    if m.flags.c_contiguous:
        return m.T, _TRANSPOSED[op]
    return np.asfortranarray(m), op


def _vector(m, op, column: int | None):
    """Column 0 of ``op(m)`` (``column=0``) or row 0 of it (``column=None``) as a 1-D array."""
    value = apply_op(m, op)
    return value[:, 0] if column == 0 else value[0, :]


def _conj_inplace(a):
    np.conjugate(a, out=a)


def _gemv(out, m, op, v, dtype):
    """``out += op(m) @ v`` in place (``out`` a contiguous vector), or a new ``op(m) @ v`` when ``out`` is None."""
    m, op = _fortran(m, op)
    flip = op == "R"
    if flip:  # conj(out) += m @ conj(v)
        op, v = "N", np.conj(v)
        if out is not None:
            _conj_inplace(out)
    if out is None:
        out = _GEMV[dtype](1.0, m, v, trans=_CODE[op])
    else:
        result = _GEMV[dtype](1.0, m, v, beta=1.0, y=out, trans=_CODE[op], overwrite_y=1)
        if result is not out:  # f2py wrote into a copy (it does not for a contiguous vector)
            out[...] = result
    if flip:
        _conj_inplace(out)
    return out


def _gemm(c, x, opx, y, opy, dtype):
    """``c += op(x) @ op(y)`` in place (``c`` Fortran-contiguous), or a new product when ``c`` is None."""
    x, opx = _fortran(x, opx)
    y, opy = _fortran(y, opy)
    flip = False
    if "R" in (opx, opy):
        if "N" not in (opx, opy):  # conj(c) += conj(op(x)) @ conj(op(y)), all expressible
            flip = True
            opx, opy = _CONJUGATED[opx], _CONJUGATED[opy]
        else:  # conjugate the operand (its size, never the output's)
            if opx == "R":
                x, opx = np.conj(x), "N"
            if opy == "R":
                y, opy = np.conj(y), "N"
    if c is None:
        c = _GEMM[dtype](1.0, x, y, trans_a=_CODE[opx], trans_b=_CODE[opy])
    else:
        if flip:
            _conj_inplace(c)
        result = _GEMM[dtype](1.0, x, y, beta=1.0, c=c, trans_a=_CODE[opx], trans_b=_CODE[opy], overwrite_c=1)
        if result is not c:  # f2py wrote into a copy (it does not for a Fortran-ordered c)
            c[...] = result
    if flip:
        _conj_inplace(c)
    return c


def muladd(acc, x, opx: str, y, opy: str) -> bool:
    """``acc += op(x) @ op(y)`` in place with BLAS (``beta = 1``); ``False`` if it cannot.

    All three must be 2-D arrays of one BLAS dtype and ``acc`` writeable and contiguous (C or
    Fortran order); operands of any layout are accepted.

    >>> import numpy as np
    >>> acc, a, b = np.ones((2, 2)), np.eye(2), np.full((2, 2), 2.0)
    >>> muladd(acc, a, "T", b, "N"), acc
    (True, array([[3., 3.],
           [3., 3.]]))
    """
    dtype = blas_dtype(acc, x, y)
    if dtype is None or not acc.flags.writeable:
        return False
    if acc.flags.f_contiguous:
        _muladd(acc, x, opx, y, opy, dtype)
    elif acc.flags.c_contiguous:  # acc.T += op(y).T @ op(x).T, with acc.T Fortran-contiguous
        _muladd(acc.T, y, _TRANSPOSED[opy], x, _TRANSPOSED[opx], dtype)
    else:
        return False
    return True


def _muladd(c, x, opx, y, opy, dtype):
    """``c += op(x) @ op(y)`` for a Fortran-contiguous ``c`` (or the new product when ``c`` is None),
    with gemv, ger or gemm according to the shape."""
    if dtype.kind == "f":
        opx, opy = _REAL[opx], _REAL[opy]
    M, K = x.shape if opx in "NR" else x.shape[::-1]
    N = y.shape[1] if opy in "NR" else y.shape[0]
    if N == 1:
        column = _gemv(None if c is None else c[:, 0], x, opx, _vector(y, opy, column=0), dtype)
        return column.reshape(M, 1) if c is None else c
    if M == 1:
        row = _gemv(None if c is None else c[0, :], y, _TRANSPOSED[opy], _vector(x, opx, column=None), dtype)
        return row.reshape(1, N) if c is None else c
    if K == 1:  # an outer product: a rank-1 update, or elementwise when new
        u, v = _vector(x, opx, column=0), _vector(y, opy, column=None)
        if c is None:
            return np.multiply.outer(u, v)
        result = _GER[dtype](1.0, u, v, a=c, overwrite_a=1)
        if result is not c:  # f2py wrote into a copy (it does not for a Fortran-ordered c)
            c[...] = result
        return c
    return _gemm(c, x, opx, y, opy, dtype)


def _is_complex(m) -> bool:
    return m.dtype.kind == "c" if type(m) is np.ndarray else np.iscomplexobj(m)


def product(x, opx: str, y, opy: str):
    """``op(x) @ op(y)`` as a new array: ``np.matmul`` on views, or SciPy's BLAS where an operand
    would otherwise be conjugated into a copy (BLAS conjugates as it reads).

    >>> import numpy as np
    >>> product(np.array([[1.0, 2.0]]), "T", np.array([[3.0, 4.0]]), "N")
    array([[3., 4.],
           [6., 8.]])
    """
    if not (_CONJUGATES[opx] and _is_complex(x)) and not (_CONJUGATES[opy] and _is_complex(y)):
        return np.matmul(apply_op(x, opx), apply_op(y, opy))  # no copy: NumPy passes transposes to BLAS
    dtype = blas_dtype(x, y)
    if dtype is None:
        return np.matmul(apply_op(x, opx), apply_op(y, opy))
    # (op(y).T @ op(x).T).T: BLAS writes Fortran order, so the transposed product comes out in C order
    return _muladd(None, y, _TRANSPOSED[opy], x, _TRANSPOSED[opx], dtype).T
