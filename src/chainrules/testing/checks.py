"""Comparing tangents approximately, and checking that a tangent is valid for its primal.

Both report every problem at once, each with a breadcrumb path (``argument 2 (b).weights[1]``),
and raise ``AssertionError`` so that pytest shows them as test failures.
"""

from __future__ import annotations

import dataclasses
from numbers import Complex, Integral, Real

import numpy as np

from ..core import AbstractZero, Tangent, ZeroTangent, unthunk
from ..core.sparse import SparsePattern, is_sparse
from ..core.tangents import _is_namedtuple_type
from .to_vec import _OPAQUE, _has_state, _object_fields, describe

# ----- default tolerances --------------------------------------------------------------------

# (rtol, atol) for comparing with finite differences, by the least precise float type involved.
# float64 follows ChainRulesTestUtils (1e-9); float32 arithmetic limits a 5-point finite
# difference to about eps32 ** 0.8 ~ 3e-6 relative, so its bound is far looser.
_TOLERANCES = {8: (1e-9, 1e-9), 4: (1e-3, 1e-3), 2: (5e-2, 5e-2)}


def default_tolerances(*values) -> tuple[float, float]:
    """``(rtol, atol)`` for finite-difference comparisons of ``values``: 1e-9 for float64, 1e-3 for float32.

    >>> import numpy as np
    >>> from chainrules.testing import default_tolerances
    >>> default_tolerances(1.0), default_tolerances(np.ones(2, np.float32))
    ((1e-09, 1e-09), (0.001, 0.001))
    """
    return _TOLERANCES[_least_precision(values)]


def primal_tolerance(*values) -> float:
    """Relative tolerance for "equal to rounding": a thousand machine epsilons of the least precise type."""
    bytes_ = _least_precision(values)
    return 1000 * float(np.finfo({8: np.float64, 4: np.float32, 2: np.float16}[bytes_]).eps)


def _least_precision(values) -> int:
    """Bytes of the least precise real float type inside ``values`` (8 when there is none)."""
    least = 8
    stack = list(values)
    seen = 0
    while stack and seen < 10_000:
        seen += 1
        v = unthunk(stack.pop())
        dtype = getattr(v, "dtype", None)
        if isinstance(dtype, np.dtype) and dtype.kind in "fc":
            size = dtype.itemsize // (2 if dtype.kind == "c" else 1)
            least = min(least, 8 if size > 8 else size)
        elif isinstance(v, (tuple, list)):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, Tangent):
            stack.extend(val for _, val in v.items())
        elif dataclasses.is_dataclass(v) and not isinstance(v, type):
            stack.extend(getattr(v, f.name, None) for f in dataclasses.fields(v))
    return least


# ----- approximate comparison ----------------------------------------------------------------


def _fmt(v) -> str:
    if isinstance(v, np.ndarray):
        return np.array2string(v, precision=10, threshold=24, edgeitems=4, separator=", ").replace("\n", "\n    ")
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.12g}"
    if isinstance(v, (complex, np.complexfloating)):
        return f"{complex(v):.12g}"
    return repr(v)


def _is_structure(v) -> bool:
    return isinstance(v, (Tangent, tuple, list, dict)) or _is_object(v)


def _is_object(v) -> bool:
    """An object with fields (a library's interpolant a rule returns), compared field by field."""
    if isinstance(v, (np.ndarray, np.generic, Complex, str, bytes, AbstractZero, *_OPAQUE)) or is_sparse(v):
        return False
    return (not callable(v) or _has_state(v)) and _object_fields(v) is not None


def _item(v, items: dict, key):
    """``v``'s item ``key``; one that an object does not hold in its fields is read as its attribute
    (a NumPy series' deep copy holds ``symbol``, which the original computes from ``_symbol``), and
    one missing from a structure is a zero."""
    if key in items:
        return items[key]
    return getattr(v, key, ZeroTangent()) if _is_object(v) and isinstance(key, str) else ZeroTangent()


def _items(v) -> dict:
    if isinstance(v, Tangent):
        return dict(v.items())
    if isinstance(v, dict):
        return dict(v)
    if _is_object(v):
        return {k: getattr(v, k) for k in _object_fields(v)}
    return dict(enumerate(v))


def _crumb(key) -> str:
    return f"[{key}]" if isinstance(key, int) else f".{key}"


def _compare(actual, expected, rtol, atol, path, problems, why="") -> None:
    a, e = unthunk(actual), unthunk(expected)
    if isinstance(a, AbstractZero) and isinstance(e, AbstractZero):
        return
    if _is_structure(a) or _is_structure(e):
        if isinstance(a, Tangent) and isinstance(e, Tangent) and type(a).primal_type is not type(e).primal_type:
            problems.append(f"{path}: {why}expected a {type(e).__name__}, got a {type(a).__name__}")
            return
        if not (_is_structure(a) or isinstance(a, AbstractZero)) or not (
            _is_structure(e) or isinstance(e, AbstractZero)
        ):
            problems.append(f"{path}: {why}expected {_fmt(e)}, got {_fmt(a)}")
            return
        a_items = {} if isinstance(a, AbstractZero) else _items(a)
        e_items = {} if isinstance(e, AbstractZero) else _items(e)
        if _is_positional(a) and _is_positional(e) and len(a_items) != len(e_items):
            problems.append(f"{path}: {why}expected {len(e_items)} elements, got {len(a_items)}")
            return
        keyed = any(_is_mapping(v) for v in (a, e))
        for key in list(e_items) + [k for k in a_items if k not in e_items]:
            crumb = f"[{key!r}]" if keyed else _crumb(key)
            _compare(_item(a, a_items, key), _item(e, e_items, key), rtol, atol, f"{path}{crumb}", problems, why)
        return
    shown_a, shown_e = a, e  # a zero singleton is compared as zeros but reported as itself
    a, e = (v.toarray() if is_sparse(v) else v for v in (a, e))  # (sparse tangents compared as their matrices)
    if isinstance(a, AbstractZero):
        a = np.zeros_like(np.asarray(e))
    if isinstance(e, AbstractZero):
        e = np.zeros_like(np.asarray(a))
    try:
        a_arr, e_arr = np.asarray(a), np.asarray(e)
        numeric = a_arr.dtype.kind in "biufc" and e_arr.dtype.kind in "biufc"
    except (TypeError, ValueError):
        numeric = False
    if not numeric:
        if not _same_value(a, e):
            problems.append(f"{path}: {why}expected {_fmt(e)}, got {_fmt(a)}")
        return
    if a_arr.shape != e_arr.shape:
        problems.append(f"{path}: {why}expected shape {e_arr.shape}, got shape {a_arr.shape}")
        return
    message = _leaf_mismatch(a_arr, e_arr, rtol, atol)
    if message:
        problems.append(f"{path}: {why}expected {_fmt(shown_e)}, got {_fmt(shown_a)}\n    {message}")


def _is_mapping(v) -> bool:
    return isinstance(v, dict) or (isinstance(v, Tangent) and type(v).primal_type is dict)


def _is_positional(v) -> bool:
    if isinstance(v, Tangent):
        return isinstance(v.backing, tuple)
    return isinstance(v, (tuple, list))


def _same_value(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:  # an object whose == is not a boolean
        return a is b


def _leaf_mismatch(a: np.ndarray, e: np.ndarray, rtol: float, atol: float) -> str | None:
    """None when ``a`` is close to ``e`` (the norm test of Julia's isapprox), else the error summary."""
    a = a.astype(np.complex128 if np.iscomplexobj(a) or np.iscomplexobj(e) else np.float64)
    e = e.astype(a.dtype)
    if a.size == 0:
        return None
    diff = np.abs(a - e)
    with np.errstate(invalid="ignore", over="ignore"):
        norm_diff = float(np.linalg.norm(diff.ravel()))
        scale = max(float(np.linalg.norm(a.ravel())), float(np.linalg.norm(e.ravel())))
    finite = np.all(np.isfinite(a)) and np.all(np.isfinite(e))
    if finite and norm_diff <= max(atol, rtol * scale):
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(np.abs(e) > 0, diff / np.abs(e), np.where(diff > 0, np.inf, 0.0))
    summary = (
        f"max abs error {float(np.max(diff)):.3g}, max rel error {float(np.max(rel)):.3g} "
        f"(norm of the error {norm_diff:.3g} > max(atol={atol:g}, rtol={rtol:g} * {scale:.3g}))"
    )
    if not finite:
        summary += "; the values are not all finite"
        if not np.all(np.isfinite(e)):
            summary += (
                " (the expected side is not finite: finite differences may have left the function's domain;"
                " pass fdm=central_fdm(5, 1, max_range=...) with a smaller range or test at another point)"
            )
    return summary


def assert_approx(actual, expected, *, rtol: float | None = None, atol: float | None = None, name: str = "value"):
    """Assert that two tangents (or primals) are close, structure by structure, leaf by leaf.

    Thunks are evaluated, zeros equal zero arrays, ``Tangent[P]`` fields are compared by name
    (a missing field is zero). Each numeric leaf passes when
    ``norm(actual - expected) <= max(atol, rtol * max(norm(actual), norm(expected)))``. The
    ``AssertionError`` lists every leaf that fails with its path, both values, and the largest
    absolute and relative errors. Default tolerances depend on the dtypes (see
    ``default_tolerances``).

    >>> import chainrules as cr
    >>> from chainrules.testing import assert_approx
    >>> assert_approx(cr.Tangent[tuple](1.0, cr.ZeroTangent()), cr.Tangent[tuple](1.0 + 1e-12, 0.0))
    >>> assert_approx(2.0, 2.1, name="dx")
    Traceback (most recent call last):
    ...
    AssertionError: dx: expected 2.1, got 2
        max abs error 0.1, max rel error 0.0476 (norm of the error 0.1 > max(atol=1e-09, rtol=1e-09 * 2.1))
    """
    default_rtol, default_atol = default_tolerances(actual, expected)
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    problems: list[str] = []
    _compare(actual, expected, rtol, atol, name, problems)
    if problems:
        raise AssertionError("\n".join(problems))


def approx_problems(actual, expected, rtol: float, atol: float, name: str, why: str = "") -> list[str]:
    """The mismatches ``assert_approx`` would report, as a list (empty when close).

    Each reads ``"{name}{path}: {why}: expected ..., got ..."`` followed by the error summary.
    """
    problems: list[str] = []
    _compare(actual, expected, rtol, atol, name, problems, f"{why}: " if why else "")
    return problems


# ----- validity of a tangent for its primal ----------------------------------------------------


def _has_no_tangent(x) -> bool:
    """Primals whose only valid tangent is NoTangent: bools, strings, None, plain functions."""
    if isinstance(x, (bool, np.bool_)):
        return True
    if isinstance(x, np.ndarray):
        return x.dtype.kind not in "biufc"
    if isinstance(x, _OPAQUE):
        return True
    return callable(x) and not _has_state(x)


def _is_int(x) -> bool:
    if isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "iu"
    return isinstance(x, (Integral, np.integer))


def _is_bool(x) -> bool:
    return isinstance(x, (bool, np.bool_)) or (isinstance(x, np.ndarray) and x.dtype.kind == "b")


def must_be_no_tangent(x) -> bool:
    """Whether ``NoTangent()`` (not ``ZeroTangent()``) is required for ``x`` as a whole argument."""
    return _has_no_tangent(x) or _is_int(x) or _is_bool(x)


def tangent_problems(x, dx, path: str, *, top: bool = True, nondiff: bool = False) -> list[str]:
    """Why ``dx`` is not a valid tangent of the primal ``x`` (an empty list when it is).

    Valid: a zero; for a float a real scalar; for a NumPy float scalar a scalar of its dtype; for
    a complex number a number; for an array an array of the same shape and dtype (float32 stays
    float32, a real array gets a real tangent); for an integer argument ``NoTangent()`` or, when
    the integer is used arithmetically, a real (float64) tangent; for a structure a
    ``Tangent[type(x)]`` whose fields are valid. Booleans, strings, ``None``, functions and
    arguments marked ``nondiff`` get ``NoTangent()``; for those (and for integers)
    ``ZeroTangent()`` is reported as the wrong zero, as ChainRulesTestUtils does.

    >>> import numpy as np
    >>> from chainrules.testing.checks import tangent_problems
    >>> print(*tangent_problems(np.ones(2, np.float32), np.ones(2), "dx"))
    dx: expected an array of dtype float32 (the primal's), got an array of shape (2,) and dtype float64
    """
    dx = unthunk(dx)
    x = unthunk(x)
    if isinstance(dx, AbstractZero):
        if top and isinstance(dx, ZeroTangent) and (nondiff or must_be_no_tangent(x)):
            what = "a non-differentiable argument" if nondiff else _article(_kind_name(x))
            return [
                f"{path}: got ZeroTangent() for {what}; use NoTangent() for values that cannot be perturbed "
                "(ZeroTangent says the derivative is zero, NoTangent that none exists)"
            ]
        return []
    if nondiff or _has_no_tangent(x):
        what = "an argument marked nondiff" if nondiff else _article(_kind_name(x))
        return [f"{path}: {what} has no derivative: expected NoTangent(), got {describe(dx)} {_fmt_short(dx)}"]
    if _is_int(x):
        return _int_tangent_problems(x, dx, path, top)
    if isinstance(x, np.ndarray):
        return _array_tangent_problems(x, dx, path)
    if is_sparse(x):
        return _sparse_tangent_problems(x, dx, path)
    if isinstance(x, np.floating):
        return _npscalar_problems(x, dx, path)
    if isinstance(x, (float, Real)):
        if isinstance(dx, np.ndarray) or isinstance(dx, Tangent) or not isinstance(dx, Real) or _is_bool(dx):
            if isinstance(dx, Complex) and not isinstance(dx, np.ndarray):
                return [
                    f"{path}: a complex tangent {_fmt_short(dx)} for a real argument; "
                    "project it with cr.match_input(x, dx) or cr.ProjectTo(x)"
                ]
            return [f"{path}: expected a real scalar (a float), got {describe(dx)}"]
        if isinstance(dx, np.floating) and dx.dtype != np.float64:
            return [f"{path}: expected a float64 scalar for a Python float, got a {dx.dtype} scalar"]
        return []
    if isinstance(x, (np.complexfloating, complex, Complex)):
        if isinstance(dx, (np.ndarray, Tangent)) or not isinstance(dx, Complex):
            return [f"{path}: expected a complex scalar, got {describe(dx)}"]
        if (
            isinstance(x, np.complexfloating)
            and isinstance(dx, np.generic)
            and dx.dtype.itemsize * (2 if dx.dtype.kind == "f" else 1) != x.dtype.itemsize
        ):
            return [f"{path}: expected a {x.dtype} scalar, got a {dx.dtype} scalar"]
        return []
    return _structure_problems(x, dx, path)


def _article(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _kind_name(x) -> str:
    if _is_bool(x):
        return "bool" if not isinstance(x, np.ndarray) else "bool array"
    if _is_int(x):
        return "integer" if not isinstance(x, np.ndarray) else "integer array"
    if isinstance(x, str):
        return "string"
    if x is None:
        return "None"
    if callable(x):
        return "function"
    return type(x).__name__


def _fmt_short(v) -> str:
    text = _fmt(v)
    return text if len(text) < 60 else text[:57] + "..."


def _int_tangent_problems(x, dx, path, top) -> list[str]:
    if not top:
        return [
            f"{path}: an integer field has no derivative: expected a zero (NoTangent()), got {describe(dx)} "
            f"{_fmt_short(dx)}"
        ]
    if isinstance(x, np.ndarray):
        if not isinstance(dx, np.ndarray) or dx.shape != x.shape or dx.dtype.kind != "f":
            return [
                f"{path}: expected NoTangent() for an integer array (or, if it is used arithmetically, "
                f"a float array of shape {x.shape}), got {describe(dx)}"
            ]
        return []
    if isinstance(dx, (np.ndarray, Tangent)) or not isinstance(dx, Real) or _is_bool(dx):
        return [
            f"{path}: expected NoTangent() for an integer (or, if it is used arithmetically, a float), "
            f"got {describe(dx)}"
        ]
    return []


def _array_tangent_problems(x: np.ndarray, dx, path) -> list[str]:
    if x.ndim == 0 and isinstance(dx, np.generic):
        dx = np.asarray(dx)
    if not isinstance(dx, np.ndarray):
        return [f"{path}: expected an array of shape {x.shape} and dtype {x.dtype}, got {describe(dx)}"]
    problems = []
    if dx.shape != x.shape:
        problems.append(f"{path}: expected an array of shape {x.shape} (the primal's), got {describe(dx)}")
    if dx.dtype != x.dtype:
        if x.dtype.kind == "f" and dx.dtype.kind == "c":
            problems.append(
                f"{path}: a complex tangent (dtype {dx.dtype}) for a real array; take the real part "
                "(cr.match_input(x, dx) or cr.ProjectTo(x) does)"
            )
        else:
            problems.append(f"{path}: expected an array of dtype {x.dtype} (the primal's), got {describe(dx)}")
    return problems


def _sparse_tangent_problems(x, dx, path) -> list[str]:
    """A sparse matrix's tangent is a sparse matrix of its shape and float dtype (``core.sparse``)."""
    want = SparsePattern(x).dtype
    if not is_sparse(dx) or dx.shape != x.shape or dx.dtype != want:
        return [f"{path}: expected a sparse matrix of shape {x.shape} and dtype {want}, got {describe(dx)}"]
    return []


def _npscalar_problems(x: np.floating, dx, path) -> list[str]:
    if isinstance(dx, np.ndarray) and dx.ndim == 0:
        dx = dx[()]
    if x.dtype == np.float64 and type(dx) in (float, int):
        return []  # a Python float is a float64
    if not isinstance(dx, np.generic) or dx.dtype != x.dtype:
        return [f"{path}: expected a {x.dtype} scalar (the primal's dtype), got {describe(dx)} {_fmt_short(dx)}"]
    return []


def _structure_problems(x, dx, path) -> list[str]:
    P = type(x)
    structural = isinstance(x, (Tangent, tuple, list, dict)) or _object_fields(x) is not None
    if not structural:  # an opaque object: any non-zero tangent is as good as we can tell
        return []
    if not isinstance(dx, Tangent):
        hint = f"cr.Tangent[{P.__name__}](...)" if not isinstance(x, Tangent) else type(x).__name__
        return [f"{path}: expected a structural tangent {hint} for a {P.__qualname__}, got {describe(dx)}"]
    want = type(x).primal_type if isinstance(x, Tangent) else P
    have = type(dx).primal_type
    if not (issubclass(want, have) or issubclass(have, want)):
        return [f"{path}: expected a Tangent[{want.__qualname__}], got a {type(dx).__name__}"]
    problems: list[str] = []
    backing = dx.backing
    if isinstance(x, Tangent):
        fields = dict(x.items())
    elif isinstance(x, dict):
        fields = dict(x)
    elif isinstance(x, (tuple, list)) and not _is_namedtuple_type(P):
        fields = dict(enumerate(x))
    elif _is_namedtuple_type(P):
        fields = dict(zip(P._fields, x))
    else:
        fields = {k: getattr(x, k) for k in _object_fields(x)}
    if isinstance(backing, tuple):
        if len(backing) != len(fields):
            return [f"{path}: {type(dx).__name__} has {len(backing)} fields, the primal has {len(fields)}"]
        pairs = list(zip(fields.items(), backing))
        for (key, value), t in pairs:
            problems += tangent_problems(value, t, f"{path}{_crumb(key)}", top=False)
        return problems
    for key, t in backing.items():
        if key not in fields:
            problems.append(f"{path}: {type(dx).__name__} has a field {key!r} that the {P.__qualname__} lacks")
            continue
        problems += tangent_problems(fields[key], t, f"{path}{_crumb(key)}", top=False)
    return problems


def deep_unthunk(t):
    """``t`` with every thunk evaluated, inside structural tangents too."""
    t = unthunk(t)
    if isinstance(t, Tangent):
        backing = t.backing
        if isinstance(backing, tuple):
            return type(t)(*(deep_unthunk(v) for v in backing))
        if type(t).primal_type is dict:
            return type(t)({k: deep_unthunk(v) for k, v in backing.items()})
        return type(t)(**{k: deep_unthunk(v) for k, v in backing.items()})
    return t


def is_zero_tangent(t) -> bool:
    """Whether ``t`` is a zero: a zero singleton, or numbers/arrays/structures that are all zero."""
    t = unthunk(t)
    if isinstance(t, AbstractZero):
        return True
    if _is_structure(t):
        return all(is_zero_tangent(v) for v in _items(t).values())
    try:
        return bool(np.all(np.asarray(t) == 0))
    except (TypeError, ValueError):
        return False
