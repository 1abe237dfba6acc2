"""Rules for Python's ``math`` and ``cmath`` modules.

``math`` functions take real numbers (ints too: an int argument gets a float derivative) and
return floats; most are one ``scalar_rule`` row of partial derivatives, with ``out`` standing
for the primal output where the derivative reuses it (ChainRules' Ω). Where a derivative is
infinite (``sqrt`` at 0, ``asin`` at ±1) the partial is ``inf`` rather than a Python
``ZeroDivisionError``. Integer-valued and boolean functions (``floor``, ``isnan``,
``factorial``, ...) are non-differentiable.

``cmath`` functions are holomorphic: the pullback multiplies by the conjugate derivative; the
real-valued ``phase`` and ``polar`` follow ChainRules' convention (the gradient of a real f of
z = x + iy is df/dx + i df/dy).

>>> import math, chainrules as cr
>>> cr.rrule(math.hypot, 3.0, 4.0)[1](1.0)
(NoTangent(), 0.6, 0.8)
>>> cr.frule((cr.NoTangent(), 1.0), math.sqrt, 4)
(2.0, 0.25)
"""

from __future__ import annotations

import cmath
import math

import numpy as np
from scipy.special import digamma

from ..core import (
    AbstractZero,
    ActiveValue,
    NoRuleError,
    NoTangent,
    Tangent,
    ZeroTangent,
    conj,
    frule,
    input_matcher,
    match_input,
    non_differentiable,
    rrule,
    scalar_rule,
    unthunk,
    user_location,
)
from .operators import pow_partials, real_cotangent, seq_entries, seq_tangent, zero_for

_NO = NoTangent()
_ZERO = ZeroTangent()
_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _recip(x):
    """1 / x, and +inf at 0 (the slope of sqrt, cbrt, asin, ... where it is unbounded)."""
    return 1.0 / x if x != 0 else math.inf


# ----- sin and cos: one computation, shared -----------------------------------------------------


def _float_tangent(t):
    """The tangent of a Python float output: a float, even for a NumPy float32 input (a batch stays an array)."""
    return float(t) if isinstance(t, np.floating) else t


# their pullbacks multiply a cotangent, or a batch of them (`real_cotangent`), by the partials
@rrule.register(math.sin, batched=True)
def rrule_sin(x):
    # Python has no sincos: both are computed here, once, so the pullback only multiplies.
    s, c = math.sin(x), math.cos(x)

    def sin_pullback(dy):
        if type(dy) is not float:
            dy = real_cotangent(dy)
        return _NO, dy * c if type(x) is float else input_matcher(s, dy)(x, dy * c)

    return s, sin_pullback


@frule.register(math.sin, batched=True)
def frule_sin(tangents, x):
    return math.sin(x), _float_tangent(math.cos(x) * tangents[1])


@rrule.register(math.cos, batched=True)
def rrule_cos(x):
    s, c = math.sin(x), math.cos(x)

    def cos_pullback(dy):
        if type(dy) is not float:
            dy = real_cotangent(dy)
        return _NO, -dy * s if type(x) is float else input_matcher(c, dy)(x, -dy * s)

    return c, cos_pullback


@frule.register(math.cos, batched=True)
def frule_cos(tangents, x):
    return math.cos(x), _float_tangent(-math.sin(x) * tangents[1])


# ----- one-line rules ------------------------------------------------------------------------------

# trigonometric and hyperbolic functions and their inverses
scalar_rule(math.tan, lambda x, *, out: 1.0 + out * out)
scalar_rule(math.asin, lambda x: _recip(math.sqrt(1.0 - x * x)))
scalar_rule(math.acos, lambda x: -_recip(math.sqrt(1.0 - x * x)))
scalar_rule(math.atan, lambda x: 1.0 / (1.0 + x * x))
scalar_rule(math.sinh, lambda x: math.cosh(x))
scalar_rule(math.cosh, lambda x: math.sinh(x))
scalar_rule(math.tanh, lambda x, *, out: 1.0 - out * out)
scalar_rule(math.asinh, lambda x: 1.0 / math.sqrt(x * x + 1.0))
scalar_rule(math.acosh, lambda x: _recip(math.sqrt(x * x - 1.0)))
scalar_rule(math.atanh, lambda x: 1.0 / (1.0 - x * x))
scalar_rule(math.degrees, lambda x: 180.0 / math.pi)
scalar_rule(math.radians, lambda x: math.pi / 180.0)

# exponentials, logarithms, roots
scalar_rule(math.exp, lambda x, *, out: out)
scalar_rule(math.exp2, lambda x, *, out: out * _LN2)
scalar_rule(math.expm1, lambda x, *, out: out + 1.0)
scalar_rule(math.log2, lambda x: 1.0 / (x * _LN2))
scalar_rule(math.log10, lambda x: 1.0 / (x * _LN10))
scalar_rule(math.log1p, lambda x: 1.0 / (1.0 + x))
scalar_rule(math.sqrt, lambda x, *, out: 0.5 * _recip(out))
scalar_rule(math.cbrt, lambda x, *, out: _recip(3.0 * out * out))

# special functions (d/dx lgamma = digamma also for negative x, where lgamma is log|gamma|)
scalar_rule(math.erf, lambda x: _TWO_OVER_SQRT_PI * math.exp(-x * x))
scalar_rule(math.erfc, lambda x: -_TWO_OVER_SQRT_PI * math.exp(-x * x))
scalar_rule(math.gamma, lambda x, *, out: out * float(digamma(x)))
scalar_rule(math.lgamma, lambda x: float(digamma(x)))

# two arguments
scalar_rule(
    math.atan2,
    lambda y, x: x / (x * x + y * y) if x or y else 0.0,
    lambda y, x: -y / (x * x + y * y) if x or y else 0.0,
)
# |x| with the sign of s: the slope is ±1 (never 0, as ChainRules' `copysign`); s only picks a sign.
scalar_rule(
    math.copysign,
    lambda x, s: 1.0 if math.copysign(1.0, x) == math.copysign(1.0, s) else -1.0,
    lambda x, s: zero_for(s),
)
# fmod(x, y) = x - n y and remainder(x, y) = x - m y with integer n (truncated), m (rounded) quotients
# that are piecewise constant: d/dx = 1, d/dy = -quotient. (x - out) / y recovers it without rounding x / y.
scalar_rule(math.fmod, lambda x, y: 1.0, lambda x, y, *, out: -float(round((x - out) / y)))
scalar_rule(math.remainder, lambda x, y: 1.0, lambda x, y, *, out: -float(round((x - out) / y)))
scalar_rule(math.ldexp, lambda x, i: math.ldexp(1.0, i), lambda x, i: _NO)
# one step to the next float towards y: the identity in x, wherever it is differentiable
scalar_rule(math.nextafter, lambda x, y: 1.0, lambda x, y: zero_for(y))
scalar_rule(math.fabs, lambda x: 1.0 if x > 0 else (-1.0 if x < 0 else 0.0))


# ----- logarithm with an optional base, power --------------------------------------------------


@rrule.register(math.log, batched=True)
def rrule_log(x, *base):
    y = math.log(x, *base)
    if not base:

        def log_pullback(dy):
            if type(dy) is not float:
                dy = real_cotangent(dy)
            return _NO, dy / x

        return y, log_pullback
    (b,) = base
    log_b = math.log(b)

    # log_b(x) = log(x) / log(b): d/dx = 1 / (x log b), d/db = -log_b(x) / (b log b)
    def log_pullback(dy):
        dy = real_cotangent(dy)
        return _NO, dy / (x * log_b), -dy * y / (b * log_b)

    return y, log_pullback


@frule.register(math.log, batched=True)
def frule_log(tangents, x, *base):
    y = math.log(x, *base)
    if not base:
        return y, tangents[1] / x
    (b,) = base
    log_b = math.log(b)
    return y, tangents[1] / (x * log_b) - tangents[2] * (y / (b * log_b))


@rrule.register(math.pow, batched=True)
def rrule_math_pow(x, p):
    y = math.pow(x, p)

    def math_pow_pullback(dy):
        dy = real_cotangent(dy)
        px, pp = pow_partials(x, p, y)
        return _NO, dy * px, dy * pp

    return y, math_pow_pullback


@frule.register(math.pow, batched=True)
def frule_math_pow(tangents, x, p):
    y = math.pow(x, p)
    px, pp = pow_partials(x, p, y)
    return y, px * tangents[1] + pp * tangents[2]


# ----- several arguments: hypot, dist; sequences: fsum, prod ------------------------------------


def _unit(coords, h):
    """The gradient of the Euclidean norm h of coords: coords / h (0 at the origin)."""
    return [c / h for c in coords] if h != 0 else [0.0] * len(coords)


@rrule.register(math.hypot, batched=True)
def rrule_hypot(*coords):
    h = math.hypot(*coords)
    g = _unit(coords, h)

    def hypot_pullback(dy):
        dy = real_cotangent(dy)
        return (_NO, *(dy * gi for gi in g))

    return h, hypot_pullback


@frule.register(math.hypot, batched=True)
def frule_hypot(tangents, *coords):
    h = math.hypot(*coords)
    dh = _ZERO
    for gi, dx in zip(_unit(coords, h), tangents[1:]):
        dh = dh + gi * dx
    return h, dh


def _sequence(f, xs):
    """The elements of a sequence argument; iterators cannot take a cotangent back."""
    if isinstance(xs, (tuple, list)):
        return xs
    raise NoRuleError(f, (xs,), location=user_location(), reason="the rule takes a tuple or a list")


def _distance(differences: list):
    """The Euclidean norm of ``differences``: ``math.hypot``'s for real numbers; for an engine's
    numbers (a Hessian's dual numbers), which ``math`` functions would convert, by their own
    arithmetic."""
    if not any(isinstance(c, ActiveValue) for c in differences):  # (NumPy floats too: math.dist gives a float)
        return math.hypot(*differences)
    return sum(c * c for c in differences) ** 0.5


@rrule.register(math.dist)
def rrule_dist(p, q):
    differences = [a - b for a, b in zip(_sequence(math.dist, p), _sequence(math.dist, q))]
    d = _distance(differences)
    g = _unit(differences, d)

    def dist_pullback(dy):
        dy = real_cotangent(dy)
        if isinstance(dy, AbstractZero):
            return _NO, dy, dy
        return _NO, seq_tangent(p, [dy * gi for gi in g]), seq_tangent(q, [-dy * gi for gi in g])

    return d, dist_pullback


@frule.register(math.dist)
def frule_dist(tangents, p, q):
    d = math.dist(p, q)
    n = len(p)
    dd = _ZERO
    for gi, dp, dq in zip(
        _unit([a - b for a, b in zip(p, q)], d), seq_entries(tangents[1], n), seq_entries(tangents[2], n)
    ):
        dd = dd + gi * (dp - dq)
    return d, dd


def _fsum(items):
    """``math.fsum(items)``; an engine's numbers among them (a Hessian's, forward mode's run
    through the source engine) are added in order, since fsum would convert them to floats."""
    if any(isinstance(v, ActiveValue) for v in items):
        return sum(items[1:], items[0])
    return math.fsum(items)


@rrule.register(math.fsum)
def rrule_fsum(xs):
    items = _sequence(math.fsum, xs)
    n = len(items)

    def fsum_pullback(dy):
        return _NO, seq_tangent(xs, (real_cotangent(dy),) * n)

    return _fsum(items), fsum_pullback


@frule.register(math.fsum)
def frule_fsum(tangents, xs):
    items = _sequence(math.fsum, xs)
    dy = _ZERO
    for e in seq_entries(tangents[1], len(items)):
        dy = dy + e
    return _fsum(items), dy


@rrule.register(math.prod)
def rrule_prod(xs, *, start=1):
    """The cotangent of each factor is ``dy`` times the product of the others, formed from prefix and
    suffix products so that zeros among the factors are handled exactly (no division by the product)."""
    items = _sequence(math.prod, xs)
    n = len(items)
    prefix = [start]
    for x in items:
        prefix.append(prefix[-1] * x)
    y = prefix[-1]

    def prod_pullback(dy):
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return _NO, dy
        entries = [None] * n
        suffix = 1
        for i in range(n - 1, -1, -1):
            entries[i] = dy * conj(prefix[i] * suffix)
            suffix = suffix * items[i]
        return _NO, seq_tangent(xs, entries)

    return y, prod_pullback


@frule.register(math.prod)
def frule_prod(tangents, xs, *, start=1):
    items = _sequence(math.prod, xs)
    y = start
    dy = _ZERO
    for x, dx in zip(items, seq_entries(tangents[1], len(items))):
        dy = dy * x + y * dx  # product rule, one factor at a time
        y = y * x
    return y, dy


# ----- tuple outputs: frexp, modf ---------------------------------------------------------------


@rrule.register(math.frexp)
def rrule_frexp(x):
    """``x = m * 2**e``: the mantissa moves with x (dm/dx = 2**-e), the integer exponent does not."""
    m, e = math.frexp(x)

    def frexp_pullback(dy):
        dm = real_cotangent(seq_entries(dy, 2)[0])
        return _NO, dm if isinstance(dm, AbstractZero) else match_input(x, math.ldexp(dm, -e))

    return (m, e), frexp_pullback


@frule.register(math.frexp)
def frule_frexp(tangents, x):
    m, e = math.frexp(x)
    return (m, e), Tangent[tuple](_float_tangent(tangents[1] * 2.0**-e), _NO)


@rrule.register(math.modf)
def rrule_modf(x):
    """``(fractional part, integer part)``: the fractional part moves with x, the integer part is flat."""

    def modf_pullback(dy):
        dx = real_cotangent(seq_entries(dy, 2)[0])
        return _NO, dx if isinstance(dx, AbstractZero) else match_input(x, dx)

    return math.modf(x), modf_pullback


@frule.register(math.modf)
def frule_modf(tangents, x):
    return math.modf(x), Tangent[tuple](_float_tangent(tangents[1]), _ZERO)


non_differentiable(
    math.floor,
    math.ceil,
    math.trunc,
    math.isnan,
    math.isinf,
    math.isfinite,
    math.isclose,
    math.factorial,
    math.comb,
    math.perm,
    math.gcd,
    math.lcm,
    math.isqrt,
    math.ulp,
)


# ----- cmath: holomorphic functions, and the real-valued phase ----------------------------------


def _complex(z) -> complex:
    """``z`` as cmath takes it: a real ``x`` is ``x + 0j``, on the upper side of a branch cut."""
    return z if type(z) is complex else complex(z)


def _asin_root(z) -> complex:
    """``sqrt(1 - z^2)`` on the branch of ``cmath.asin`` and ``cmath.acos``: ``sqrt(1 - z) sqrt(1 + z)``.

    On a cut it is the side the functions take: ``cmath.asin(1.4)`` is the limit from above,
    ``pi/2 + 0.87j``, where ``sqrt(1 - z^2)`` is ``-0.98j`` (``cmath.sqrt(1 - 1.4 ** 2)`` gives
    ``+0.98j``). That needs the sign of a zero imaginary part kept: ``1.0 - z`` and ``z + 1.0``
    would make ``-0.0`` a ``+0.0``, so they are written ``-(z - 1.0)`` and ``z - (-1.0)``.
    """
    z = _complex(z)
    return cmath.sqrt(-(z - 1.0)) * cmath.sqrt(z - (-1.0))


scalar_rule(cmath.exp, lambda z, *, out: out)
scalar_rule(cmath.log10, lambda z: 1.0 / (z * _LN10))
scalar_rule(cmath.sqrt, lambda z, *, out: 0.5 / out if out != 0 else complex(math.inf))
scalar_rule(cmath.sin, lambda z: cmath.cos(z))
scalar_rule(cmath.cos, lambda z: -cmath.sin(z))
scalar_rule(cmath.tan, lambda z, *, out: 1.0 + out * out)
scalar_rule(cmath.asin, lambda z: 1.0 / _asin_root(z))
scalar_rule(cmath.acos, lambda z: -1.0 / _asin_root(z))
scalar_rule(cmath.atan, lambda z: 1.0 / (1.0 + z * z))
scalar_rule(cmath.sinh, lambda z: cmath.cosh(z))
scalar_rule(cmath.cosh, lambda z: cmath.sinh(z))
scalar_rule(cmath.tanh, lambda z, *, out: 1.0 - out * out)
# (z * z - (-1.0) is z * z + 1.0, keeping the sign of a zero imaginary part: see _asin_root)
scalar_rule(cmath.asinh, lambda z: 1.0 / cmath.sqrt(_complex(z) * _complex(z) - (-1.0)))
# acosh(z) = log(z + sqrt(z - 1) sqrt(z + 1)) on the principal branch, whose derivative is this product
scalar_rule(cmath.acosh, lambda z: 1.0 / (cmath.sqrt(_complex(z) - 1.0) * cmath.sqrt(_complex(z) - (-1.0))))
scalar_rule(cmath.atanh, lambda z: 1.0 / (1.0 - z * z))
# phase(z) = atan2(y, x) is real: its gradient is (-y + i x) / |z|^2 = i z / |z|^2, and scalar_rule
# multiplies the cotangent by the conjugate of the partial, so the partial is its conjugate, -i / z.
scalar_rule(cmath.phase, lambda z: -1j / z if z != 0 else 0j)


@rrule.register(cmath.log)
def rrule_cmath_log(z, *base):
    y = cmath.log(z, *base)
    log_b = cmath.log(base[0]) if base else 1.0

    # log_b(z) = log(z) / log(b), holomorphic in both
    def cmath_log_pullback(dy):
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return (_NO, dy) + (dy,) * len(base)
        dz = match_input(z, dy * conj(1.0 / (z * log_b)))
        if not base:
            return _NO, dz
        return _NO, dz, match_input(base[0], -dy * conj(y / (base[0] * log_b)))

    return y, cmath_log_pullback


@frule.register(cmath.log, batched=True)
def frule_cmath_log(tangents, z, *base):
    y = cmath.log(z, *base)
    if not base:
        return y, tangents[1] / z
    log_b = cmath.log(base[0])
    return y, tangents[1] / (z * log_b) - tangents[2] * (y / (base[0] * log_b))


@rrule.register(cmath.polar)
def rrule_polar(z):
    """``(|z|, phase(z))``: their gradients are z / |z| and i z / |z|^2 (zero at the origin)."""
    r, phi = cmath.polar(z)
    unit = z / r if r != 0 else 0j

    def polar_pullback(dy):
        dr, dphi = (real_cotangent(d) for d in seq_entries(dy, 2))
        dz = dr * unit + (dphi * 1j * unit / r if r != 0 else _ZERO)
        return _NO, match_input(z, dz) if not isinstance(dz, AbstractZero) else dz

    return (r, phi), polar_pullback


@frule.register(cmath.polar)
def frule_polar(tangents, z):
    r, phi = cmath.polar(z)
    dz = tangents[1]
    if r == 0:
        return (r, phi), Tangent[tuple](_ZERO, _ZERO)
    unit = z / r
    # d|z| = Re(conj(z / |z|) dz), dphase = Re(conj(i z / |z|^2) dz)
    d_abs, d_phase = _real_part(conj(unit) * dz), _real_part(-1j * conj(unit) * dz / r)
    return (r, phi), Tangent[tuple](_float_tangent(d_abs), _float_tangent(d_phase))


def _real_part(t):
    return t if isinstance(t, AbstractZero) else np.real(t)


@rrule.register(cmath.rect)
def rrule_rect(r, phi):
    """``r * exp(i phi)`` for real r and phi: each gets the real part of its conjugate partial times dz."""
    e = cmath.exp(1j * phi)
    y = cmath.rect(r, phi)  # a Python complex, whatever the type of the real numbers r and phi

    def rect_pullback(dz):
        dz = unthunk(dz)
        if isinstance(dz, AbstractZero):
            return _NO, dz, dz
        return _NO, match_input(r, dz * e.conjugate()), match_input(phi, dz * (1j * y).conjugate())

    return y, rect_pullback


@frule.register(cmath.rect, batched=True)
def frule_rect(tangents, r, phi):
    e = cmath.exp(1j * phi)
    y = cmath.rect(r, phi)
    return y, e * tangents[1] + (1j * y) * tangents[2]


non_differentiable(cmath.isnan, cmath.isinf, cmath.isfinite, cmath.isclose)
