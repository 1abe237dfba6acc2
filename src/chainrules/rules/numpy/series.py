"""Rules for ``numpy.polynomial``: the series of each family (power series, Chebyshev, Legendre,
Hermite, HermiteE, Laguerre) and the classes that hold them (``Polynomial``, ``Chebyshev``, ...).

A family's ``val(x, c, tensor=True)`` (``polyval``, ``chebval``, ...) is linear in the coefficients
``c``, which run along its first axis: ``y = sum_k C[k] B_k(x)``, ``B_k`` the family's basis and
``C`` the coefficients as NumPy lays them out (a length-1 axis per axis of ``x`` where ``tensor``
is true and ``x`` is an array, so that ``y.shape = c.shape[1:] + x.shape``; else ``c``'s columns
broadcast against ``x``). So

    c̄[k] = sum ȳ conj(B_k(x)),    x̄ = ȳ conj(y'(x)),

each summed over the axes its operand was broadcast along: the columns ``B_k(x)`` are the
family's Vandermonde matrix (``chebvander``), and ``y'`` is the family's ``val`` of its ``der``
of ``C``. ``vander(x, deg)`` itself has the slopes ``B_k'(x)``: ``vander(x, deg - 1)`` times the
derivative's matrix. ``der(c, m, scl, axis)`` and ``int(c, m, k, lbnd, scl, axis)`` are linear in
``c`` along ``axis`` (``int``'s constants ``k`` add an offset): the tangent is the function of the
tangent (without the offset), and the cotangent is the transpose of the function's matrix (the
function of the identity) times the cotangent. ``m``, ``k``, ``lbnd``, ``scl`` and ``axis`` are
settings, and so are ``deg`` and ``pow``'s power. ``val2d``, ``val3d``, ``grid2d`` and ``grid3d``
evaluate along each axis of ``c`` in turn, by ``val``: their rules are ``val``'s, composed. ``add``,
``sub`` and ``mul`` of two series are linear and bilinear in their coefficients; the cotangents of
``mul(c1, c2)`` are ``A^H ȳ`` and ``B^H ȳ``, the columns of ``A`` the products ``mul(e_i, c2)`` of
``c2`` with the basis series (``B``'s: ``mul(c1, e_j)``), and ``pow`` is ``mul``'s rules composed.
NumPy trims the trailing zero coefficients of their operands and results: where that drops a
coefficient a tangent moves, its derivative would be lost, and the rules refuse the call (the reverse
rules wherever NumPy trims one, as they cannot tell which operand is differentiated).

Every rule computes with the family's own functions, on an engine's values (the duals of a
Hessian) through these functions' forward rules (``through_rules``).

An instance of a class holds its coefficients in ``coef``; its tangent is structural,
``Tangent[Chebyshev](coef=..., domain=..., window=...)``, with the domain and window it holds itself
(its class's defaults are constants; ``symbol`` is a setting). The rules of the classes are
compositions of the functions' rules: construction ``Chebyshev(coef, domain, window, symbol)``, a
call ``p(x)`` (``x`` mapped from the domain to the window by ``off + scl * x``, then the family's
``val``), ``p.deriv(m)``, ``p.integ(m, k, lbnd)``, ``p + q``, ``p - q``, ``p * q`` (``q`` a series
of ``p``'s kind, a number or coefficients, on either side), ``p ** n``, ``-p``, ``+p`` and
iterating over ``p`` (its coefficients); ``p.coef`` is read as any object's field.

>>> import numpy as np, chainrules as cr
>>> from numpy.polynomial import chebyshev as C
>>> y, back = cr.rrule(C.chebval, 0.5, np.array([1.0, 2.0, 3.0]))  # 1 + 2 x + 3 (2x^2 - 1)
>>> _, dx, dc = back(1.0)  # dy/dx = 2 + 12 x, dy/dc = (1, x, 2x^2 - 1)
>>> float(y), float(cr.unthunk(dx)), cr.unthunk(dc)
(0.5, 8.0, array([ 1. ,  0.5, -0.5]))
"""

from __future__ import annotations

import functools
import inspect
import operator
from types import ModuleType

import numpy as np
from numpy.polynomial import (
    Chebyshev,
    Hermite,
    HermiteE,
    Laguerre,
    Legendre,
    Polynomial,
    chebyshev,
    hermite,
    hermite_e,
    laguerre,
    legendre,
    polynomial,
)
from numpy.polynomial._polybase import ABCPolyBase

from ...core import AbstractZero, NoDerivativeError, Tangent, Thunk, add, frule, rrule, unthunk
from ...core.errors import ChainRulesError, at_user, callable_name
from ...core.structures import item_tangents
from ..scipy._lapack import through_rules
from ._arrays import (
    NO,
    ZERO,
    array_or_active,
    batch_of,
    batch_to_input,
    cotangent_array,
    is_batched,
    normalize_axis,
    sum_to,
    tangent_array,
    to_input,
)
from ._util import align, match_output

# ----- the families -------------------------------------------------------------------------------


class _Family:
    """A family's functions (``chebval``, ``chebval2d``, ..., ``chebpow``)."""

    __slots__ = ("val", "val2d", "val3d", "grid2d", "grid3d", "vander", "der", "int", "add", "sub", "mul", "pow")

    def __init__(self, module: ModuleType, prefix: str):
        for name in self.__slots__:
            setattr(self, name, getattr(module, prefix + name))


_FAMILIES = [
    _Family(module, prefix)
    for module, prefix in (
        (polynomial, "poly"),
        (chebyshev, "cheb"),
        (legendre, "leg"),
        (hermite, "herm"),
        (hermite_e, "herme"),
        (laguerre, "lag"),
    )
]


def _conj(x):
    return np.conj(x) if np.iscomplexobj(x) else x


def _padded(shape: tuple, ndim: int) -> tuple:
    """``shape`` with leading 1s to ``ndim`` axes: the part of an output a broadcast operand spans."""
    return (1,) * (ndim - len(shape)) + tuple(shape)


# ----- val ----------------------------------------------------------------------------------------


def _series_layout(x, c, rest: tuple, kwargs: dict):
    """``(x, C)`` as ``val(x, c, tensor)`` reads them: a list or tuple ``x`` as an array, ``c`` as
    an array of at least one axis (integers as floats) given a length-1 axis per axis of ``x`` when
    ``x`` is an array and ``tensor`` is true. ``val(x, C, False)`` is then ``val(x, c, tensor)``."""
    if isinstance(x, (list, tuple)):
        x = np.asarray(x)
    c = array_or_active(c)
    if np.ndim(c) == 0:
        c = np.reshape(c, (1,))
    if np.result_type(c).kind in "biu":
        c = c + 0.0
    if bool(rest[0] if rest else kwargs.get("tensor", True)) and np.ndim(x) > 0:
        c = np.reshape(c, np.shape(c) + (1,) * np.ndim(x))
    return x, c


def _slope(family: _Family, x, C):
    """``y'(x)`` of ``y = val(x, C, tensor=False)``: the family's series of ``der(C)``."""
    return through_rules(family.val, x, through_rules(family.der, C), False)


def _basis(family: _Family, x, n: int):
    """``B_0(x), ..., B_{n-1}(x)`` along a new first axis: ``(n, *np.shape(x))``."""
    V = through_rules(family.vander, x, n - 1)  # (NumPy's vander makes a number x a 1-d array)
    return np.moveaxis(np.reshape(V, np.shape(x) + (n,)), -1, 0)


def _val_rules(family: _Family):
    val = family.val

    def rrule_series_val(x, c, *rest, **kwargs):
        xs, C = _series_layout(x, c, rest, kwargs)
        y = through_rules(val, xs, C, False)
        options = (NO,) * len(rest)

        def series_val_pullback(dy):
            batch = batch_of(y, dy) if type(dy) is not np.ndarray or dy.ndim != np.ndim(y) else None
            dy = cotangent_array(y, dy) if batch is None else batch
            if isinstance(dy, AbstractZero):
                return (NO, dy, dy) + options
            lead = () if batch is None else np.shape(batch)[:1]
            back = to_input if batch is None else batch_to_input
            ndim = np.ndim(y)

            def coefficients():
                n = np.shape(C)[0]
                B = _conj(_basis(family, xs, n))
                B = np.reshape(B, (n,) + (1,) * len(lead) + _padded(np.shape(xs), ndim))
                dC = sum_to(np.expand_dims(dy, 0) * B, (n,) + lead + _padded(np.shape(C)[1:], ndim))
                return back(c, np.reshape(np.moveaxis(dC, 0, len(lead)), lead + np.shape(c)))

            def points():
                dx = sum_to(dy * _conj(_slope(family, xs, C)), lead + _padded(np.shape(xs), ndim))
                return back(x, np.reshape(dx, lead + np.shape(x)))

            return (NO, Thunk(points), Thunk(coefficients)) + options

        return y, series_val_pullback

    def frule_series_val(tangents, x, c, *rest, **kwargs):
        xs, C = _series_layout(x, c, rest, kwargs)
        y = through_rules(val, xs, C, False)
        dx, dc = unthunk(tangents[1]), tangent_array(c, unthunk(tangents[2]))
        terms = []
        if not isinstance(dc, AbstractZero):
            if np.ndim(dc) > np.ndim(c):  # a batch: each dC[k] one tangent per row, over the output's axes
                dc = np.moveaxis(np.reshape(dc, (-1,) + np.shape(C)), 0, 1)
                dC = np.reshape(dc, np.shape(dc)[:2] + _padded(np.shape(C)[1:], np.ndim(y)))
            else:
                dC = np.reshape(dc, np.shape(C))
            terms.append(through_rules(val, xs, dC, False))
        if not isinstance(dx, AbstractZero):
            terms.append(align(xs, tangent_array(x, dx), np.ndim(y)) * _slope(family, xs, C))
        if not terms:
            return y, ZERO
        return y, match_output(y, terms[0] if len(terms) == 1 else terms[0] + terms[1])

    _name(rrule_series_val, frule_series_val, val)
    rrule.register(val, batched=True)(rrule_series_val)
    frule.register(val, batched=True)(frule_series_val)


def _name(rrule_f, frule_f, f) -> None:
    rrule_f.__name__ = rrule_f.__qualname__ = f"rrule_{f.__name__}"
    frule_f.__name__ = frule_f.__qualname__ = f"frule_{f.__name__}"


def _nd_rules(f, val, grid: bool) -> None:
    """Rules for ``f(x, y, c)`` or ``f(x, y, z, c)`` (``chebval2d``, ``chebgrid3d``, ...): the family's
    ``val`` along each axis of ``c`` in turn, as NumPy computes them (``pu._valnd``, ``pu._gridnd``),
    composed of ``val``'s rules: at the points' tuples (the first evaluation ``tensor``, the others
    not), or on their grid (each ``tensor``)."""

    def steps(points: list) -> list:
        """``(x, val's options)`` for each evaluation."""
        if grid:
            return [(x, ()) for x in points]
        if len({np.shape(x) for x in points}) > 1:  # NumPy's own error
            f(*(np.zeros(np.shape(x)) for x in points), np.zeros(1))
        return [(x, () if i == 0 else (False,)) for i, x in enumerate(points)]

    def rrule_series_nd(*args):
        *points, c = args
        pullbacks = []
        for x, options in steps(points):
            c, back = rrule(val, x, c, *options)
            pullbacks.append(back)

        def series_nd_pullback(dy):
            dpoints = []
            for back in reversed(pullbacks):
                _, dx, dy = back(dy)[:3]
                dpoints.append(dx)
            return (NO, *reversed(dpoints), dy)

        return c, series_nd_pullback

    def frule_series_nd(tangents, *args):
        *points, c = args
        dc = tangents[-1]
        for (x, options), dx in zip(steps(points), tangents[1:-1]):
            c, dc = frule((NO, dx, dc, *(NO for _ in options)), val, x, c, *options)
        return c, dc

    _name(rrule_series_nd, frule_series_nd, f)
    rrule.register(f, batched=True)(rrule_series_nd)
    frule.register(f, batched=True)(frule_series_nd)


# ----- vander -------------------------------------------------------------------------------------


def _vander_slopes(family: _Family, x, deg: int):
    """``B_k'(x)`` for ``k <= deg``, as ``vander(x, deg)`` lays out ``B_k(x)``: ``vander(x, deg - 1)``
    times the matrix of ``der`` (the derivatives of the basis in the basis one degree lower)."""
    if deg == 0:
        return np.zeros_like(through_rules(family.vander, x, 0))
    D = family.der(np.eye(deg + 1))  # (deg, deg + 1): column k is B_k' in the basis
    return through_rules(family.vander, x, deg - 1) @ D


def _vander_rules(family: _Family):
    vander = family.vander

    def rrule_series_vander(x, deg, **kwargs):
        y = through_rules(vander, x, deg, **kwargs)

        def series_vander_pullback(dy):
            dy = unthunk(dy)
            if isinstance(dy, AbstractZero):
                return NO, dy, NO
            batched = is_batched(y, dy)
            lead = np.shape(dy)[:1] if batched else ()
            slopes = _vander_slopes(family, x, operator.index(deg))
            dx = Thunk(
                lambda: (batch_to_input if batched else to_input)(
                    x, np.reshape(np.sum(dy * _conj(slopes), axis=-1), lead + np.shape(x))
                )
            )
            return NO, dx, NO

        return y, series_vander_pullback

    def frule_series_vander(tangents, x, deg, **kwargs):
        y = through_rules(vander, x, deg, **kwargs)
        dx = tangent_array(x, unthunk(tangents[1]))
        if isinstance(dx, AbstractZero):
            return y, ZERO
        lead = np.shape(dx)[:1] if is_batched(x, dx) else ()
        dx = np.reshape(dx, lead + np.shape(y)[:-1] + (1,))
        return y, match_output(y, dx * _vander_slopes(family, x, operator.index(deg)))

    _name(rrule_series_vander, frule_series_vander, vander)
    rrule.register(vander, batched=True)(rrule_series_vander)
    frule.register(vander, batched=True)(frule_series_vander)


# ----- der and int: linear along an axis ------------------------------------------------------


def _checked_length(f, y, axis: int, mapped, mapped_axis: int):
    """``mapped``, the linear part of ``f`` applied along ``mapped_axis``, where its length there is
    ``y``'s along ``axis``; a refusal where NumPy's result is not the map of the coefficients (it
    integrates a series of one zero coefficient to a constant, one coefficient where any other gets
    one more; hermeder's result for ``m >= len(c)`` keeps the coefficients' axis first)."""
    if np.shape(mapped)[mapped_axis] != np.shape(y)[axis]:
        raise NoDerivativeError(
            f"{callable_name(f)}{at_user()}: NumPy's result has {np.shape(y)[axis]} coefficients along the axis, "
            f"where the map of the coefficients has {np.shape(mapped)[mapped_axis]}: it has no derivative there"
        )
    return mapped


def _linear_rules(f):
    """Rules for ``f(c, ...)`` (a family's ``der`` or ``int``), linear in ``c`` along ``axis`` but
    for ``int``'s constants ``k``, which the tangent map and the matrix leave out."""
    signature = inspect.signature(f)

    def settings(c, rest: tuple, kwargs: dict) -> tuple[dict, dict, int]:
        """``f``'s settings as given, those of its linear part (no constants ``k``), and its axis."""
        bound = signature.bind(c, *rest, **kwargs)
        bound.apply_defaults()
        given = {k: v for k, v in bound.arguments.items() if k != "c"}
        linear = {**given, "k": []} if "k" in given else given
        return given, linear, normalize_axis(operator.index(given["axis"]), max(np.ndim(c), 1))

    def rrule_series_linear(c, *rest, **kwargs):
        given, linear, axis = settings(c, rest, kwargs)
        y = through_rules(f, c, **given)
        options = (NO,) * len(rest)
        shape = np.shape(array_or_active(c)) or (1,)  # (NumPy makes a number a 1-d array)

        def series_linear_pullback(dy):
            dy = unthunk(dy)
            if isinstance(dy, AbstractZero):
                return (NO, dy) + options
            batched = is_batched(y, dy)
            lead = np.shape(dy)[:1] if batched else ()

            def coefficients():
                dtype = np.result_type(1.0, *(linear[k] for k in ("scl", "lbnd") if k in linear))
                M = _checked_length(f, y, axis, f(np.eye(shape[axis], dtype=dtype), **{**linear, "axis": 0}), 0)
                dc = np.tensordot(_conj(M).T, np.moveaxis(dy, axis + len(lead), 0), 1)
                dc = np.moveaxis(dc, 0, axis + len(lead))
                return (batch_to_input if batched else to_input)(c, np.reshape(dc, lead + np.shape(c)))

            return (NO, Thunk(coefficients)) + options

        return y, series_linear_pullback

    def frule_series_linear(tangents, c, *rest, **kwargs):
        given, linear, axis = settings(c, rest, kwargs)
        y = through_rules(f, c, **given)
        dc = tangent_array(c, unthunk(tangents[1]))
        if isinstance(dc, AbstractZero):
            return y, ZERO
        lead = np.shape(dc)[:1] if is_batched(c, dc) else ()
        # (the coefficients' axis first: NumPy's hermeder leaves it first when m >= len(c))
        dc = np.moveaxis(np.reshape(dc, lead + (np.shape(array_or_active(c)) or (1,))), axis + len(lead), 0)
        dy = _checked_length(f, y, axis, through_rules(f, dc, **{**linear, "axis": 0}), 0)
        return y, match_output(y, np.moveaxis(dy, 0, axis + len(lead)))

    _name(rrule_series_linear, frule_series_linear, f)
    rrule.register(f, batched=True)(rrule_series_linear)
    frule.register(f, batched=True)(frule_series_linear)


# ----- add, sub, mul --------------------------------------------------------------------------


def _trimmed(f, kept: int, n: int) -> NoDerivativeError:
    return NoDerivativeError(
        f"{callable_name(f)}{at_user()}: NumPy trims the trailing zero coefficients of its operands and of its "
        f"result, here to {kept} of {n}, and the derivatives in them with them; pass coefficients whose last one "
        f"and whose result's last one are not zero"
    )


def _full_length(f, y, n: int):
    """``y``, the result of ``f`` of ``n`` coefficients before NumPy trims its trailing zeros; a refusal
    where it trimmed some (off an operand or the result): the reverse rule cannot tell whether the
    derivatives in them would be lost."""
    if np.shape(y)[0] != n:
        raise _trimmed(f, np.shape(y)[0], n)
    return y


def _cut(f, y, dy):
    """The tangent ``dy`` of ``f``'s result before NumPy trimmed its trailing zeros, cut to ``y``'s
    length: a refusal where it moves one of the coefficients trimmed (constant operands may have
    trailing zeros)."""
    kept, n = np.shape(y)[0], np.shape(dy)[-1]
    if n > kept and np.any(dy[..., kept:] != 0):
        raise _trimmed(f, kept, n)
    return dy[..., :kept]


def _two_series_rules(f, n_out, maps) -> None:
    """Rules for ``f(c1, c2)`` of two coefficient arrays, linear in each (``add``, ``sub``, ``mul``):
    ``n_out(a, b)`` is the result's length before NumPy trims its trailing zeros, and ``maps(a, b, n)``
    gives each operand's ``(push, pull)``, the map of its tangent to the result's and of the result's
    cotangent to its own, along the last axis (leading batch axes kept)."""

    def parts(c1, c2):
        a, b = _coefficients(c1), _coefficients(c2)
        return a, b, through_rules(f, a, b), n_out(a, b)

    def rrule_series(c1, c2):
        a, b, y, n = parts(c1, c2)
        _full_length(f, y, n)

        def series_pullback(dy):
            dy = unthunk(dy)
            if isinstance(dy, AbstractZero):
                return NO, dy, dy
            back = batch_to_input if is_batched(y, dy) else to_input
            lead = np.shape(dy)[:-1]
            (_, pull_a), (_, pull_b) = maps(a, b, n)
            da = Thunk(lambda: back(c1, np.reshape(pull_a(dy), lead + np.shape(c1))))
            db = Thunk(lambda: back(c2, np.reshape(pull_b(dy), lead + np.shape(c2))))
            return NO, da, db

        return y, series_pullback

    def frule_series(tangents, c1, c2):
        a, b, y, n = parts(c1, c2)
        terms = []
        for x, c, t, (push, _) in zip((c1, c2), (a, b), tangents[1:], maps(a, b, n)):
            t = tangent_array(x, unthunk(t))
            if not isinstance(t, AbstractZero):
                lead = np.shape(t)[:1] if is_batched(x, t) else ()
                terms.append(push(np.reshape(t, lead + np.shape(c))))
        if not terms:
            return y, ZERO
        return y, match_output(y, _cut(f, y, terms[0] if len(terms) == 1 else terms[0] + terms[1]))

    _name(rrule_series, frule_series, f)
    rrule.register(f, batched=True)(rrule_series)
    frule.register(f, batched=True)(frule_series)


def _sum_rules(f, sign: float) -> None:
    """Rules for a family's ``add`` (``sign`` 1) or ``sub`` (-1) of ``c1`` and ``c2``, each padded with
    zeros to the longer: the tangent is the sum (difference) of the tangents, and the cotangents are
    the result's, cut to each operand's length (negated for ``sub``'s second)."""

    def maps(a, b, n):
        def padded(m: int, s: float):
            return lambda t: s * np.pad(t, [(0, 0)] * (np.ndim(t) - 1) + [(0, n - m)])

        m_a, m_b = np.shape(a)[0], np.shape(b)[0]
        return (padded(m_a, 1.0), lambda dy: dy[..., :m_a]), (padded(m_b, sign), lambda dy: sign * dy[..., :m_b])

    _two_series_rules(f, lambda a, b: max(np.shape(a)[0], np.shape(b)[0]), maps)


def _product_rules(mul) -> None:
    """Rules for a family's ``mul(c1, c2)``, bilinear: the tangent is ``A dc1 + B dc2`` and the
    cotangents ``A^H ȳ`` and ``B^H ȳ``, where ``A``'s columns are ``mul(e_i, c2)`` and ``B``'s
    ``mul(c1, e_j)``, the products with the basis series (``e_i`` without its trailing zeros, which
    NumPy would trim), padded to the result's length."""

    def maps(a, b, n):
        A = [through_rules(mul, np.eye(i + 1)[i], b) for i in range(np.shape(a)[0])]
        B = [through_rules(mul, a, np.eye(j + 1)[j]) for j in range(np.shape(b)[0])]
        matrices = (np.stack([np.pad(col, (0, n - np.shape(col)[0])) for col in M], axis=-1) for M in (A, B))
        return tuple((lambda t, M=M: t @ M.T, lambda dy, M=M: dy @ _conj(M)) for M in matrices)

    _two_series_rules(mul, lambda a, b: np.shape(a)[0] + np.shape(b)[0] - 1, maps)


def _power_rules(f, mul) -> None:
    """Rules for a family's ``pow(c, n, maxpower)``: ``c`` multiplied by itself ``n - 1`` times by the
    family's ``mul`` (as NumPy multiplies, in the z-series for Chebyshev's: the same but for rounding),
    composed of ``mul``'s rules; ``n`` is a setting, checked by NumPy."""
    signature = inspect.signature(f)

    def power(c, rest: tuple, kwargs: dict) -> int:
        bound = signature.bind(c, *rest, **kwargs)
        bound.apply_defaults()
        f(np.ones(1), *list(bound.arguments.values())[1:])  # (NumPy's checks of the power)
        return int(bound.arguments["pow"])

    def rrule_series_pow(c, *rest, **kwargs):
        n, a = power(c, rest, kwargs), _coefficients(c)
        options = (NO,) * len(rest)
        if n == 0:
            return np.ones(1, dtype=np.result_type(a)), lambda dy: (NO, ZERO) + options
        y, pullbacks = (a if n > 1 else np.copy(a)), []
        for _ in range(n - 1):
            y, back = rrule(mul, y, a)
            pullbacks.append(back)

        def series_pow_pullback(dy):
            dc = ZERO
            for back in reversed(pullbacks):
                _, dy, d_factor = back(dy)  # (dy: the cotangent of the product so far)
                dc = add(dc, d_factor)
            dc = unthunk(add(dc, dy))  # (the first factor is c too)
            if isinstance(dc, AbstractZero):
                return (NO, dc) + options
            lead = np.shape(dc)[:1] if is_batched(a, dc) else ()
            return (NO, (batch_to_input if lead else to_input)(c, np.reshape(dc, lead + np.shape(c)))) + options

        return y, series_pow_pullback

    def frule_series_pow(tangents, c, *rest, **kwargs):
        n, a = power(c, rest, kwargs), _coefficients(c)
        if n == 0:
            return np.ones(1, dtype=np.result_type(a)), ZERO
        da = tangent_array(c, unthunk(tangents[1]))
        if not isinstance(da, AbstractZero):
            da = np.reshape(da, np.shape(da)[: np.ndim(da) - np.ndim(c)] + np.shape(a))
        y, dy = (a if n > 1 else np.copy(a)), da
        for _ in range(n - 1):
            y, dy = frule((NO, dy, da), mul, y, a)
        return y, dy

    _name(rrule_series_pow, frule_series_pow, f)
    rrule.register(f, batched=True)(rrule_series_pow)
    frule.register(f, batched=True)(frule_series_pow)


for _family in _FAMILIES:
    _val_rules(_family)
    for _f, _grid in ((_family.val2d, False), (_family.val3d, False), (_family.grid2d, True), (_family.grid3d, True)):
        _nd_rules(_f, _family.val, _grid)
    _vander_rules(_family)
    _linear_rules(_family.der)
    _linear_rules(_family.int)
    _sum_rules(_family.add, 1.0)
    _sum_rules(_family.sub, -1.0)
    _product_rules(_family.mul)
    _power_rules(_family.pow, _family.mul)


# ----- the classes --------------------------------------------------------------------------------
#
# A series' tangent holds the tangents of its coefficients and of the domain and window it holds
# itself (a class's default ones are constants). A call p(x) evaluates the family's series at
# off + scl * x, where (pu.mapparms)
#     off = (d1 w0 - d0 w1) / (d1 - d0),    scl = (w1 - w0) / (d1 - d0),
# for the domain (d0, d1) and the window (w0, w1); p.deriv(m) is the family's der(coef, m, scl), which
# is scl^m times der(coef, m, 1), so that its derivative in scl is m/scl times it; p.integ(m, k, lbnd)
# integrates m times with s = 1/scl from lb = off + scl * lbnd: each step y = int(c, 1, [k_i], lb, s)
# is s times int(c, 1, [], lb, 1) plus k_i (its first coefficient), whose value at lb is zero, so that
#     dy/ds = (y - k_i e_0) / s,    dy/dlb = -s val(lb, c) e_0    (the integral's slope at lb is c's value).

_MAPS = ("domain", "window")
_AT = (("domain", 0), ("window", 2))  # (where their ends are among (d0, d1, w0, w1))


def _coefficients(x):
    """``x`` as a 1-d array of coefficients, as NumPy's ``as_series`` reads one (a number is one
    coefficient, integers become floats); an engine's value stays one."""
    c = array_or_active(x)
    if np.ndim(c) == 0:
        c = np.reshape(c, (1,))
    if np.ndim(c) != 1:
        raise ValueError("Coefficient array is not 1-d")
    return c + 0.0 if np.result_type(c).kind in "biu" else c


def _new_series(cls, coef, domain=None, window=None, symbol="x"):
    """``cls(coef, domain, window, symbol)``, where the arrays may be an engine's values (duals, which
    NumPy's constructor would convert): NumPy builds the instance (its checks, its dtypes) on zeros of
    their shapes and dtypes, and is then given them, cast and copied as it casts and copies them."""
    given = {k: array_or_active(v) for k, v in zip(("coef", *_MAPS), (coef, domain, window)) if v is not None}
    stand_ins = {k: np.zeros(np.shape(v), dtype=np.result_type(v)) for k, v in given.items()}
    new = cls(stand_ins["coef"], stand_ins.get("domain"), stand_ins.get("window"), symbol)
    for k, v in given.items():
        built = getattr(new, k)
        setattr(new, k, np.reshape(v, np.shape(built)).astype(built.dtype))
    return new


def _like(p, coef):
    """A series of ``p``'s class, domain, window and symbol with the coefficients ``coef``."""
    return _new_series(type(p), coef, p.domain, p.window, p.symbol)


def _own(p) -> tuple:
    """The fields of the series ``p`` that a tangent holds: ``coef``, and the domain and window it
    holds itself."""
    held = vars(p)
    return ("coef", *(k for k in _MAPS if k in held))


def _parts(p, dp) -> dict:
    """The tangents of ``_own(p)``'s fields in the tangent ``dp`` of the series ``p`` (zeros where none)."""
    dp = unthunk(dp)
    if isinstance(dp, AbstractZero):
        return dict.fromkeys(_own(p), ZERO)
    items = item_tangents(dp, p)
    return {k: unthunk(items[k]) for k in _own(p)}


def _series_tangent(p, parts: dict):
    """The tangent of the series ``p`` whose fields have the tangents ``parts`` (those of ``_own(p)``)."""
    own = _own(p)
    kept = {
        k: v for k, v in ((k, unthunk(v)) for k, v in parts.items()) if k in own and not isinstance(v, AbstractZero)
    }
    return Tangent[type(p)](**kept) if kept else ZERO


def _sum(*terms):
    """The sum of the tangents ``terms`` (zeros among them)."""
    return functools.reduce(add, terms, ZERO)


def _carried(p, parts: dict, coef) -> dict:
    """The tangents of ``p``'s fields for a series made from ``p`` with its domain and window, whose
    fields have the tangents ``parts``, ``coef`` the tangent of ``p``'s coefficients."""
    return {"coef": coef, **{k: parts.get(k, ZERO) for k in _own(p)[1:]}}


class _Map:
    """``off + scl * x``, the map from a series' domain to its window (by ``pu.mapparms``'s
    arithmetic), with its derivatives in the domain and window the series holds itself."""

    __slots__ = ("p", "off", "scl")

    def __init__(self, p):
        d, w = p.domain, p.window
        length = d[1] - d[0]
        self.p, self.off, self.scl = p, (d[1] * w[0] - d[0] * w[1]) / length, (w[1] - w[0]) / length

    def _slopes(self) -> tuple:
        """``d off`` and ``d scl`` by ``(d0, d1, w0, w1)``."""
        d, w, off, scl = self.p.domain, self.p.window, self.off, self.scl
        length = d[1] - d[0]
        d_off = ((off - w[1]) / length, (w[0] - off) / length, d[1] / length, -d[0] / length)
        d_scl = (scl / length, -scl / length, -1.0 / length, 1.0 / length)
        return d_off, d_scl

    def push(self, parts: dict) -> tuple:
        """``(d off, d scl)`` for the tangents of the series' fields ``parts``."""
        moved = [(i, unthunk(parts.get(k, ZERO))) for k, i in _AT]
        moved = [(i, t) for i, t in moved if not isinstance(t, AbstractZero)]
        if not moved:
            return ZERO, ZERO
        d_off, d_scl = self._slopes()
        return tuple(_sum(*(s[i] * t[0] + s[i + 1] * t[1] for i, t in moved)) for s in (d_off, d_scl))

    def pull(self, off_bar, scl_bar) -> dict:
        """The cotangents of the series' own domain and window for those of ``off`` and ``scl``."""
        own = _own(self.p)[1:]
        off_bar, scl_bar = unthunk(off_bar), unthunk(scl_bar)
        if not own or (isinstance(off_bar, AbstractZero) and isinstance(scl_bar, AbstractZero)):
            return {}
        d_off, d_scl = self._slopes()
        bars = [_sum(_conj(a) * off_bar, _conj(b) * scl_bar) for a, b in zip(d_off, d_scl)]
        bars = [0.0 if isinstance(b, AbstractZero) else b for b in bars]
        return {k: to_input(getattr(self.p, k), np.stack(bars[i : i + 2])) for k, i in _AT if k in own}


def _constructor_rules(cls) -> None:
    signature = inspect.signature(cls)
    names = tuple(signature.parameters)  # coef, domain, window, symbol

    def build(args: tuple, kwargs: dict):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return _new_series(cls, *bound.arguments.values())

    def rrule_series_new(*args, **kwargs):
        y = build(args, kwargs)

        def series_new_pullback(dy):
            parts = _parts(y, dy)
            out = [NO]
            for name, value in zip(names, args):
                d = parts.get(name, NO) if value is not None else NO
                if not isinstance(d, AbstractZero) and d is not NO:
                    d = to_input(value, np.reshape(cotangent_array(getattr(y, name), d), np.shape(value)))
                out.append(d)
            return tuple(out)

        return y, series_new_pullback

    def frule_series_new(tangents, *args, **kwargs):
        y = build(args, kwargs)
        parts = {}
        for name, value, t in zip(names, args, tangents[1:]):
            t = tangent_array(value, unthunk(t)) if name in _own(y) else ZERO
            if not isinstance(t, AbstractZero):
                field = getattr(y, name)
                parts[name] = match_output(field, np.reshape(t, np.shape(field)))
        return y, _series_tangent(y, parts)

    _name(rrule_series_new, frule_series_new, cls)
    rrule.register(cls, functor=False)(rrule_series_new)
    frule.register(cls, functor=False)(frule_series_new)


for _cls in (Polynomial, Chebyshev, Legendre, Hermite, HermiteE, Laguerre):
    _constructor_rules(_cls)


def _register_method(method, rrule_f, frule_f) -> None:
    """Register the rules of a method of the classes. A series holding an engine's values (the duals
    of a Hessian) reaches the reverse rule as it is, whose primal computes through the functions'
    rules on them; the forward rule would take them for constants of the duals it pushes."""
    _name(rrule_f, frule_f, method)
    rrule_f.on_engine_values = True
    rrule.register(method)(rrule_f)
    frule.register(method)(frule_f)


@rrule.register(ABCPolyBase)
def rrule_series_call(p, x):
    """``p(x) = val(off + scl * x, p.coef)``: the family's ``val`` at ``x`` mapped to the window."""
    mapping = _Map(p)
    xs = np.asarray(x) if isinstance(x, (list, tuple)) else x
    y, val_pullback = rrule(p._val, mapping.off + mapping.scl * xs, p.coef)

    def series_call_pullback(dy):
        _, dt, dcoef = val_pullback(dy)
        dt = unthunk(dt)
        if isinstance(dt, AbstractZero):
            return _series_tangent(p, {"coef": dcoef}), dt
        mapped = mapping.pull(np.sum(dt), np.sum(dt * _conj(xs)))
        dx = to_input(x, np.reshape(dt * _conj(mapping.scl), np.shape(x)))
        return _series_tangent(p, {"coef": dcoef, **mapped}), dx

    return y, series_call_pullback


@frule.register(ABCPolyBase)
def frule_series_call(tangents, p, x):
    mapping = _Map(p)
    xs = np.asarray(x) if isinstance(x, (list, tuple)) else x
    t = mapping.off + mapping.scl * xs
    parts = _parts(p, tangents[0])
    d_off, d_scl = mapping.push(parts)
    dx = tangent_array(x, unthunk(tangents[1]))
    dt = _sum(mapping.scl * dx, d_off, d_scl * xs)
    if not isinstance(dt, AbstractZero) and np.shape(dt) != np.shape(t):  # (only the offset moved)
        dt = dt + np.zeros(np.shape(t))
    return frule((NO, dt, parts["coef"]), p._val, t, p.coef)


_DERIV = inspect.signature(ABCPolyBase.deriv)


def rrule_series_deriv(p, *rest, **kwargs):
    """``p.deriv(m)``: the family's ``der(p.coef, m, scl)``, in ``scl`` ``m/scl`` times itself."""
    m = _DERIV.bind(p, *rest, **kwargs).arguments.get("m", 1)
    mapping = _Map(p)
    coef, der_pullback = rrule(p._der, p.coef, m, mapping.scl)
    y = _like(p, coef)
    options = (NO,) * len(rest)

    def series_deriv_pullback(dy):
        parts = _parts(y, dy)
        dcoef = parts["coef"]
        if isinstance(dcoef, AbstractZero):
            return (NO, _series_tangent(p, _carried(p, parts, dcoef))) + options
        mapped = mapping.pull(ZERO, np.sum(dcoef * _conj(coef * (m / mapping.scl))))
        carried = _carried(p, parts, der_pullback(dcoef)[1])
        return (NO, _series_tangent(p, {k: _sum(v, mapped.get(k, ZERO)) for k, v in carried.items()})) + options

    return y, series_deriv_pullback


def frule_series_deriv(tangents, p, *rest, **kwargs):
    m = _DERIV.bind(p, *rest, **kwargs).arguments.get("m", 1)
    mapping = _Map(p)
    parts = _parts(p, tangents[1])
    coef, dcoef = frule((NO, parts["coef"], NO, NO), p._der, p.coef, m, mapping.scl)
    d_scl = mapping.push(parts)[1]
    y = _like(p, coef)
    return y, _series_tangent(y, _carried(p, parts, _sum(dcoef, d_scl * (m / mapping.scl) * coef)))


_register_method(ABCPolyBase.deriv, rrule_series_deriv, frule_series_deriv)


def _leading(v, n: int):
    """``v`` times the first of ``n`` basis series: ``(v, 0, ..., 0)`` (padded: ``v`` may be a dual)."""
    return np.pad(np.reshape(v, (1,)), (0, n - 1))


_INTEG = inspect.signature(ABCPolyBase.integ)


class _Integral:
    """``p.integ(m, k, lbnd)`` step by step, as NumPy's ``int`` takes its ``m`` steps: each step's
    coefficients, and the derivatives of each in the lower bound and the scale (see above)."""

    def __init__(self, p, rest: tuple, kwargs: dict):
        bound = _INTEG.bind(p, *rest, **kwargs)
        bound.apply_defaults()
        m, k, lbnd = operator.index(bound.arguments["m"]), bound.arguments["k"], bound.arguments["lbnd"]
        k = [k] if np.ndim(k) == 0 else list(k)
        if m < 0 or len(k) > m:  # NumPy's own errors
            p._int(np.zeros(1), m, k)
        self.p, self.mapping, self.lbnd = p, _Map(p), lbnd
        self.lb = 0 if lbnd is None else self.mapping.off + self.mapping.scl * lbnd
        self.s = 1.0 / self.mapping.scl
        self.k = k + [0] * (m - len(k))
        self.steps = [p.coef]
        for ki in self.k:
            self.steps.append(through_rules(p._int, self.steps[-1], 1, [ki], self.lb, self.s))

    def step_slopes(self, i: int) -> tuple:
        """The derivatives of step ``i``'s coefficients (from 1) in ``lb`` and in ``s``."""
        before, after = self.steps[i - 1], self.steps[i]
        n = np.shape(after)[0]
        at_lb = -self.s * through_rules(self.p._val, self.lb, before)
        return _leading(at_lb, n), (after - _leading(self.k[i - 1] + 0.0 * after[0], n)) / self.s

    def map_slopes(self) -> tuple:
        """``(d lb / d off, d lb / d scl, d s / d scl)``."""
        return (0.0 if self.lbnd is None else 1.0), (0.0 if self.lbnd is None else self.lbnd), -self.s * self.s


def rrule_series_integ(p, *rest, **kwargs):
    """``p.integ(m, k, lbnd)``: ``m`` steps of the family's ``int`` (see above)."""
    integral = _Integral(p, rest, kwargs)
    y = _like(p, integral.steps[-1])
    options = (NO,) * len(rest)

    def series_integ_pullback(dy):
        parts = _parts(y, dy)
        dc, lb_bar, s_bar = parts["coef"], ZERO, ZERO
        for i in range(len(integral.k), 0, -1):
            if isinstance(dc, AbstractZero):
                break
            d_lb, d_s = integral.step_slopes(i)
            lb_bar = _sum(lb_bar, np.sum(dc * _conj(d_lb)))
            s_bar = _sum(s_bar, np.sum(dc * _conj(d_s)))
            step = rrule(p._int, integral.steps[i - 1], 1, [integral.k[i - 1]], integral.lb, integral.s)[1]
            dc = unthunk(step(dc)[1])
        lb_off, lb_scl, s_scl = integral.map_slopes()
        mapped = integral.mapping.pull(lb_bar * lb_off, _sum(lb_bar * _conj(lb_scl), s_bar * _conj(s_scl)))
        carried = _carried(p, parts, dc)
        return (NO, _series_tangent(p, {k: _sum(v, mapped.get(k, ZERO)) for k, v in carried.items()})) + options

    return y, series_integ_pullback


def frule_series_integ(tangents, p, *rest, **kwargs):
    integral = _Integral(p, rest, kwargs)
    parts = _parts(p, tangents[1])
    d_off, d_scl = integral.mapping.push(parts)
    lb_off, lb_scl, s_scl = integral.map_slopes()
    d_lb, d_s = _sum(d_off * lb_off, d_scl * lb_scl), d_scl * s_scl
    dc = parts["coef"]
    for i in range(1, len(integral.k) + 1):
        step = (NO, dc, NO, NO, NO, NO)
        dc = frule(step, p._int, integral.steps[i - 1], 1, [integral.k[i - 1]], integral.lb, integral.s)[1]
        slope_lb, slope_s = integral.step_slopes(i)
        dc = _sum(dc, d_lb * slope_lb, d_s * slope_s)
    y = _like(p, integral.steps[-1])
    return y, _series_tangent(y, _carried(p, parts, dc))


_register_method(ABCPolyBase.integ, rrule_series_integ, frule_series_integ)


# ----- the operators -------------------------------------------------------------------------------


def _operand_cotangent(other, dc):
    """The cotangent of ``other``, a series or coefficients, whose coefficients have the cotangent ``dc``."""
    if isinstance(other, ABCPolyBase):
        return _series_tangent(other, {"coef": dc})
    dc = unthunk(dc)
    return dc if isinstance(dc, AbstractZero) else to_input(other, np.reshape(dc, np.shape(other)))


def _operator_rules(method, name: str, self_first: bool) -> None:
    """Rules for ``p + q``, ``q * p``, ... (``method`` ``ABCPolyBase.__add__``, ``__rmul__``, ...): a
    series with ``p``'s domain and window whose coefficients are the family's ``add``, ``sub`` or
    ``mul`` (``p._add``, ... as ``name`` says) of ``p``'s and ``q``'s (``self_first``: ``p``'s first),
    ``q`` a series of ``p``'s kind, a number or coefficients."""

    def call(p, other):
        othercoef = p._get_coefficients(other)  # (NumPy's TypeError for a series of another kind)
        return getattr(p, name), ((p.coef, othercoef) if self_first else (othercoef, p.coef))

    def rrule_series_operator(p, other):
        f, args = call(p, other)
        try:
            coef, f_pullback = rrule(f, *args)
        except ChainRulesError:
            raise
        except Exception:  # NumPy's method returns NotImplemented: Python tries other's
            return NotImplemented, lambda dy: (NO, NO, NO)
        y = _like(p, coef)

        def series_operator_pullback(dy):
            parts = _parts(y, dy)
            dcoef = parts["coef"]
            if isinstance(dcoef, AbstractZero):
                return NO, _series_tangent(p, _carried(p, parts, dcoef)), dcoef
            _, da, db = f_pullback(dcoef)
            dp, dother = (da, db) if self_first else (db, da)
            return NO, _series_tangent(p, _carried(p, parts, dp)), _operand_cotangent(other, dother)

        return y, series_operator_pullback

    def frule_series_operator(tangents, p, other):
        f, args = call(p, other)
        parts, dother = _parts(p, tangents[1]), unthunk(tangents[2])
        if isinstance(other, ABCPolyBase):
            dother = _parts(other, dother)["coef"]
        dp = parts["coef"]
        coef, dcoef = frule((NO, dp, dother) if self_first else (NO, dother, dp), f, *args)
        y = _like(p, coef)
        return y, _series_tangent(y, _carried(p, parts, dcoef))

    _register_method(method, rrule_series_operator, frule_series_operator)


for _method, _op, _self_first in (
    (ABCPolyBase.__add__, "_add", True),
    (ABCPolyBase.__radd__, "_add", False),
    (ABCPolyBase.__sub__, "_sub", True),
    (ABCPolyBase.__rsub__, "_sub", False),
    (ABCPolyBase.__mul__, "_mul", True),
    (ABCPolyBase.__rmul__, "_mul", False),
):
    _operator_rules(_method, _op, _self_first)


def rrule_series_power(p, n):
    """``p ** n``: the family's ``pow`` of the coefficients (``n`` a setting)."""
    coef, pow_pullback = rrule(p._pow, p.coef, n, maxpower=p.maxpower)
    y = _like(p, coef)

    def series_power_pullback(dy):
        parts = _parts(y, dy)
        dcoef = parts["coef"]
        return (
            NO,
            _series_tangent(
                p, _carried(p, parts, dcoef if isinstance(dcoef, AbstractZero) else pow_pullback(dcoef)[1])
            ),
            NO,
        )

    return y, series_power_pullback


def frule_series_power(tangents, p, n):
    parts = _parts(p, tangents[1])
    coef, dcoef = frule((NO, parts["coef"], NO), p._pow, p.coef, n, maxpower=p.maxpower)
    y = _like(p, coef)
    return y, _series_tangent(y, _carried(p, parts, dcoef))


_register_method(ABCPolyBase.__pow__, rrule_series_power, frule_series_power)


def _negated(t):
    t = unthunk(t)
    return t if isinstance(t, AbstractZero) else -t


def rrule_series_neg(p):
    y = _like(p, -p.coef)

    def series_neg_pullback(dy):
        parts = _parts(y, dy)
        return NO, _series_tangent(p, _carried(p, parts, _negated(parts["coef"])))

    return y, series_neg_pullback


def frule_series_neg(tangents, p):
    y = _like(p, -p.coef)
    parts = _parts(p, tangents[1])
    return y, _series_tangent(y, _carried(p, parts, _negated(parts["coef"])))


def rrule_series_iter(p):
    """``iter(p)``: an iterator over ``p``'s coefficients."""
    iterated, iter_pullback = rrule(iter, p.coef)

    def series_iter_pullback(dy):
        return NO, _series_tangent(p, {"coef": iter_pullback(dy)[1]})

    return iterated, series_iter_pullback


rrule_series_iter.on_engine_values = True
rrule.register(ABCPolyBase.__iter__)(rrule_series_iter)


def rrule_series_pos(p):
    def series_pos_pullback(dy):
        return NO, _series_tangent(p, _parts(p, dy))

    return p, series_pos_pullback


def frule_series_pos(tangents, p):
    return p, _series_tangent(p, _parts(p, tangents[1]))


_register_method(ABCPolyBase.__neg__, rrule_series_neg, frule_series_neg)
_register_method(ABCPolyBase.__pos__, rrule_series_pos, frule_series_pos)
