"""An eleventh corpus of whole programs: the Python language as scientists use it in numerical
code. Generator functions (``yield``, ``yield from``) and generator expressions consumed by
``sum``/``min``/``max``/``np.stack``; user containers and iterables (``__iter__``,
``__getitem__``, ``__len__``, ``__contains__``); a vector class and hand-written dual numbers with
operator overloading; properties, inheritance and ``super()``, class- and static methods,
``__slots__``, ``typing.NamedTuple``, ``enum`` keys; ``try``/``except``/``else``/``finally`` with
exceptions as control flow, ``StopIteration``; ``match``; ``for``/``else``, ``while``/``else``,
``break``/``continue`` in nested loops; the walrus operator; mutual recursion; ``nonlocal``;
``*args``/``**kwargs`` forwarding, keyword-only and default arguments, ``functools.partial``;
dict and set comprehensions, dict methods, ``collections``, ``heapq``, ``bisect``, ``sorted``/
``min``/``max`` with ``key=``, ``copy``; the ``math`` module and the builtins on scalars,
``int()`` truncation as an index; context managers, ``np.errstate``; formatting values for a log
line; assertions; global counters.

Each ``@program(args...)`` is differentiated by every engine, and a construct an engine does not
support by design is listed in ``refuses`` (``program_checks.py`` says how).
"""

from __future__ import annotations

import bisect
import collections
import contextlib
import copy
import dataclasses
import enum
import functools
import heapq
import math
from typing import NamedTuple

import numpy as np
from program_checks import MATH_FORWARD, MATH_ON_TAPE, new_corpus

PROGRAMS, program = new_corpus()

GENERATOR = "a generator cannot be differentiated"
MATCH = "`match`"
ATTRIBUTE_WRITE = "assigning to an attribute mutates an object in place"
GLOBAL_WRITE = "assigning to the global variable"
NONLOCAL = "(`nonlocal`), which is not supported"
NO_RULE = "no differentiation rule for"
UNHASHABLE = "is unhashable"
APPEND_TO_ITEM = "change `groups` in place"  # a list the function did not make itself (defaultdict's)

KNOTS = [0.0, 0.5, 1.0, 1.5, 2.0, 2.5]
DATA = np.array([0.2, 0.9, 1.4, 2.1, 2.6, 3.3])

# ----- generators ---------------------------------------------------------------------------------


def exp_series_terms(x, n):
    term = 1.0
    for k in range(n):
        yield term
        term = term * x / (k + 1)


@program(0.7, hessian=True, nested=True, refuses={"source": GENERATOR})
def taylor_series_by_a_generator_function(x):
    terms = list(exp_series_terms(x, 14))
    return sum(exp_series_terms(x, 14)) + max(terms[1:4]) * terms[2]


def panel_midpoints(lo, hi, n):
    h = (hi - lo) / n
    for i in range(n):
        yield lo + (i + 0.5) * h, h


def composite_panels(a, b, c):
    yield from panel_midpoints(a, b, 4)
    yield from panel_midpoints(b, c, 3)


@program(np.array([0.8, 1.3]), hessian=True, nested=True, refuses={"source": GENERATOR})
def yield_from_chained_midpoint_quadrature(theta):
    # the integral of exp(-theta0 t) t over [0.1, 1 + theta1], split at 1.0
    return sum(h * np.exp(-theta[0] * t) * t for t, h in composite_panels(0.1, 1.0, 1.0 + theta[1]))


@program(np.array([0.3, 1.2, -0.5, 0.9]), hessian=True, nested=True)
def generator_expressions_into_min_max_and_stack(x):
    shifted = np.stack([np.roll(x, k) * (k + 1) for k in range(3)])
    energy = sum(v * v for v in x)
    lowest = min(np.sum(row * x) for row in shifted)
    highest = max(np.tanh(v) * v for v in x)
    return energy + lowest * highest + np.sum(np.stack(tuple(r**2 for r in shifted), axis=1))


def scaled(values, a):
    for v in values:
        yield a * v


def softened(values):
    for v in values:
        yield v if v < 1.0 else 1.0 + np.log(v)


@program(np.array([0.3, 0.9, 1.4, 2.2]), 1.5, nested=True, refuses={"source": GENERATOR})
def pipeline_of_chained_generators(x, gain):
    return sum(w**2 for w in softened(scaled(x, gain)))


@program(np.array([0.4, 1.3, -0.7, 0.2, 0.8]), hessian=True, nested=True)
def stopiteration_ends_a_manual_iteration(x):
    it = iter(x)
    previous = next(it)
    total = 0.0
    while True:
        try:
            v = next(it)
        except StopIteration:
            break
        total = total + (v - previous) ** 2 + v * previous
        previous = v
    return total


@program(np.array([0.5, -0.2, 1.1]), hessian=True)
def next_with_a_default_on_exhausted_iterators(x):
    positives = iter([v for v in x if v > 0])
    first = next(positives, 0.0)
    second = next(positives, 0.0)
    third = next(positives, 10.0)
    return first * second + third * np.sum(x**2)


# ----- user containers and iterables --------------------------------------------------------------


@dataclasses.dataclass
class Samples:
    """A sequence by the old protocol: Python iterates it with ``__getitem__`` until IndexError."""

    values: np.ndarray

    def __getitem__(self, i):
        return self.values[i] * 2.0

    def __len__(self):
        return len(self.values)


@program(np.array([0.3, -0.6, 0.9, 0.4]), hessian=True, nested=True)
def sequence_iterated_by_getitem_until_indexerror(x):
    s = Samples(x)
    mean = sum(s) / len(s)
    return sum((v - mean) ** 2 for v in s) + s[len(s) - 1] * s[0]


@dataclasses.dataclass
class Knots:
    points: tuple

    def __contains__(self, t):
        i = bisect.bisect_left(self.points, t)
        return i < len(self.points) and abs(self.points[i] - t) < 1e-12

    def __iter__(self):
        return iter(self.points)

    def __len__(self):
        return len(self.points)


@program(np.array([0.4, 1.1, -0.3]), hessian=True, nested=True)
def knot_set_with_contains_and_iter(c):
    knots = Knots((0.0, 0.5, 1.0, 1.5))
    total = 0.0
    for t in (0.25, 0.5, 0.75, 1.0, 1.25):
        weight = 2.0 if t in knots else 1.0
        total = total + weight * (c[0] + c[1] * t + c[2] * t * t) ** 2
    return total + sum(c[1] * k for k in knots) / len(knots)


class Batches:
    """An iterator of mini-batches: ``__next__`` advances a cursor attribute."""

    def __init__(self, data, size):
        self.data, self.size, self.start = data, size, 0

    def __iter__(self):
        return self

    def __next__(self):
        if self.start >= len(self.data):
            raise StopIteration
        batch = self.data[self.start : self.start + self.size]
        self.start += self.size
        return batch


@program(np.array([0.7, -0.4]), hessian=True, nested=True, refuses={"source": NO_RULE})
def iterator_class_of_minibatches(w):
    loss = 0.0
    for batch in Batches(DATA + 0.1 * w[0], 4):
        loss = loss + np.sum((w[0] * batch + w[1] - np.sin(batch)) ** 2) / len(batch)
    return loss


# ----- a vector class and dual numbers -----------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Vec3:
    x: float
    y: float
    z: float

    def __add__(self, o):
        return Vec3(self.x + o.x, self.y + o.y, self.z + o.z)

    def __radd__(self, o):  # sum() starts from 0
        return self if o == 0 else self + o

    def __sub__(self, o):
        return self + (-o)

    def __neg__(self):
        return Vec3(-self.x, -self.y, -self.z)

    def __mul__(self, s):
        return Vec3(self.x * s, self.y * s, self.z * s)

    def __rmul__(self, s):
        return self * s

    def __truediv__(self, s):
        return Vec3(self.x / s, self.y / s, self.z / s)

    def __matmul__(self, o):
        return self.x * o.x + self.y * o.y + self.z * o.z

    def __pow__(self, p):
        return Vec3(self.x**p, self.y**p, self.z**p)

    def __abs__(self):
        return (self @ self) ** 0.5

    def __iadd__(self, o):  # a new value, as for numbers: frozen
        return self + o


@program(np.array([0.3, -0.8, 1.2, 0.5, 0.9, -0.1]), hessian=True, nested=True)
def vector_class_with_operator_overloading(p):
    a, b = Vec3(p[0], p[1], p[2]), Vec3(p[3], p[4], p[5])
    centroid = sum([a, b, Vec3(1.0, 0.0, 0.5)]) / 3.0
    r = a - b
    torque = 2.0 * (r @ centroid) + abs(-r) + abs(b**2)
    acc = Vec3(0.0, 0.0, 0.0)
    for v in (a, b, centroid):
        acc += 0.5 * v
    return torque + acc @ acc


@dataclasses.dataclass(frozen=True)
class Dual:
    """Hand-written forward mode: a value and its derivative."""

    v: float
    d: float = 0.0

    @staticmethod
    def lift(o):
        return o if isinstance(o, Dual) else Dual(o)

    def __add__(self, o):
        o = Dual.lift(o)
        return Dual(self.v + o.v, self.d + o.d)

    __radd__ = __add__

    def __mul__(self, o):
        o = Dual.lift(o)
        return Dual(self.v * o.v, self.d * o.v + self.v * o.d)

    __rmul__ = __mul__

    def __truediv__(self, o):
        o = Dual.lift(o)
        return Dual(self.v / o.v, (self.d * o.v - self.v * o.d) / o.v**2)

    def __rtruediv__(self, o):
        return Dual.lift(o) / self

    def __pow__(self, n):
        return Dual(self.v**n, n * self.v ** (n - 1) * self.d)

    def __neg__(self):
        return Dual(-self.v, -self.d)

    def __sub__(self, o):
        return self + (-Dual.lift(o))

    def __rsub__(self, o):
        return Dual.lift(o) - self


def rational_model(t):
    return (1.0 + 2.0 * t + t**3) / (3.0 + t**2) - 0.5 * t


@program(0.8, hessian=True, nested=True)
def hand_written_dual_numbers_differentiated(x):
    y = rational_model(Dual(x, 1.0))
    # a Newton step from x on the model, with the slope from the user's dual numbers
    return y.v - (-y.v / y.d) ** 2 + 1.0 / Dual(x + 1.0, 1.0).d


class Field:
    """Values on a grid, with the algebra of a vector space."""

    __slots__ = ("values",)
    __array_ufunc__ = None  # NumPy's operators defer to the class's: matrix @ field

    def __init__(self, values):
        self.values = values

    def __add__(self, o):
        return Field(self.values + (o.values if isinstance(o, Field) else o))

    def __mul__(self, s):
        return Field(self.values * s)

    __rmul__ = __mul__

    def __neg__(self):
        return Field(-self.values)

    def __rmatmul__(self, matrix):
        return Field(matrix @ self.values)

    def __abs__(self):
        return np.sqrt(np.sum(self.values**2))


LAPLACIAN = np.array([[-2.0, 1.0, 0.0, 0.0], [1.0, -2.0, 1.0, 0.0], [0.0, 1.0, -2.0, 1.0], [0.0, 0.0, 1.0, -2.0]])


@program(np.array([0.2, 0.7, -0.3, 0.5]), hessian=True, refuses={"source": NO_RULE})
def slotted_field_class_in_an_explicit_heat_step(u0):
    u = Field(u0)
    for _ in range(3):
        u = u + 0.1 * (LAPLACIAN @ u) + -(u * 0.01)
    return abs(u) ** 2 + np.sum(u.values**3)


# ----- classes ------------------------------------------------------------------------------------


@dataclasses.dataclass
class Kernel:
    log_scale: float

    @property
    def scale(self):
        return np.exp(self.log_scale)

    @classmethod
    def unit(cls):
        return cls(0.0)

    @staticmethod
    def distance2(a, b):
        return (a - b) ** 2

    def __call__(self, a, b):
        return self.scale * np.exp(-self.distance2(a, b))


@dataclasses.dataclass
class PeriodicKernel(Kernel):
    period: float = 2.0

    def __call__(self, a, b):
        base = super().__call__(np.sin(np.pi * a / self.period), np.sin(np.pi * b / self.period))
        return base + 0.1 * super().__call__(a, b)


@program(0.3, 1.7, hessian=True, nested=True)
def kernel_hierarchy_with_property_super_and_classmethod(log_scale, period):
    pts = (0.0, 0.4, 1.1)
    kernels = [Kernel(log_scale), PeriodicKernel(log_scale, period), PeriodicKernel.unit()]
    total = 0.0
    for k in kernels:
        total = total + sum(k(a, b) for a in pts for b in pts) + k.scale
    return total + Kernel.distance2(log_scale, period)


@dataclasses.dataclass(slots=True)
class Spring:
    k: float
    rest: float = 1.0

    def energy(self, length):
        return 0.5 * self.k * (length - self.rest) ** 2


@program(np.array([1.2, 0.8, 1.5]), hessian=True, nested=True)
def slotted_dataclass_springs(k):
    springs = [Spring(ki, rest=0.9 + 0.1 * i) for i, ki in enumerate(k)]
    lengths = (1.1, 0.7, 1.3)
    return sum(s.energy(L) for s, L in zip(springs, lengths)) * springs[0].k


class Measurement(NamedTuple):
    value: float
    sigma: float = 0.1

    @property
    def weight(self):
        return 1.0 / self.sigma**2

    def residual(self, model):
        return (self.value - model) * self.weight**0.5


@program(np.array([1.1, 0.9, 1.3]), 0.2, hessian=True, nested=True)
def namedtuple_measurements_with_methods(values, sigma):
    data = [Measurement(v, sigma) for v in values] + [Measurement(1.0)]
    mean = sum(m.value * m.weight for m in data) / sum(m.weight for m in data)
    chi2 = sum(m.residual(mean) ** 2 for m in data)
    as_dicts = [m._asdict() for m in data]
    return chi2 + as_dicts[0]["value"] * data[-1].sigma


class Material(enum.Enum):
    STEEL = 1
    ALUMINIUM = 2
    COPPER = 3


class Axis(enum.IntEnum):
    X = 0
    Y = 1
    Z = 2


@program(np.array([2.1, 0.7, 1.2]), hessian=True, nested=True)
def enum_keyed_material_table(moduli):
    table = {m: moduli[m.value - 1] for m in Material}
    strain = {Material.STEEL: 0.01, Material.ALUMINIUM: 0.03, Material.COPPER: 0.02}
    energy = sum(0.5 * table[m] * strain[m] ** 2 for m in Material)
    stiffest = max(Material, key=lambda m: table[m])
    return energy * 1e3 + table[stiffest] * moduli[Axis.Y] + moduli[Axis.Z] ** 2


# ----- exceptions as control flow -----------------------------------------------------------------


class StepRejected(Exception):
    pass


def trial_step(f, x, g, t):
    x_new = x - t * g
    if f(x_new) > f(x) - 1e-4 * t * np.sum(g * g):
        raise StepRejected
    return x_new


def quartic_bowl(x):
    return np.sum(x**4) + np.sum((x - 0.5) ** 2)


@program(np.array([1.3, -0.8]), hessian=True, nested=True)
def backtracking_line_search_by_exceptions(x0):
    x, log = x0, []
    for _ in range(3):
        g = 4 * x**3 + 2 * (x - 0.5)
        t = 1.0
        while True:
            try:
                x_new = trial_step(quartic_bowl, x, g, t)
            except StepRejected:
                t = t * 0.5
            else:
                x = x_new
                break
            finally:
                log.append(t)
    return quartic_bowl(x) + 0.01 * len(log)


def log_or_raise(v):
    if v <= 0:
        raise ValueError(f"log of a non-positive value {v}")
    return np.log(v)


@program(np.array([0.8, -0.3, 1.7, -1.2]), hessian=True, nested=True)
def value_error_on_a_value_condition_selects_a_fallback(x):
    total = 0.0
    for v in x:
        try:
            total = total + log_or_raise(v) * v
        except ValueError:
            total = total - v**2
    return total


class Converged(Exception):
    pass


@program(np.array([1.5, 0.4]), hessian=True, nested=True)
def exception_leaves_nested_loops(p):
    # a fixed point x = p0 * cos(x) + p1, iterated in sweeps until the step is small
    x = 0.0
    try:
        for _ in range(20):
            for _ in range(10):
                step = p[0] * np.cos(x) + p[1] - x
                x = x + 0.6 * step
                if abs(step) < 1e-13:
                    raise Converged
    except Converged:
        pass
    return x**2 + p[0] * x


def divided_difference(f, a, b):
    try:
        return (f(a) - f(b)) / (a - b)
    except ZeroDivisionError:  # coincident points: the derivative
        return 3 * a**2 + 1.0


@program(0.7, hessian=True, nested=True)
def zero_division_at_coincident_points_falls_back(x):
    cubic = lambda t: t**3 + t  # noqa: E731
    return divided_difference(cubic, x, x) + divided_difference(cubic, x, 1.5)


@program(np.array([0.6, 1.4, 0.9]), hessian=True, nested=True)
def return_inside_try_with_finally(x):
    log = []

    def guarded_energy(v):
        try:
            return np.sum(v**2) + np.prod(v)
        finally:
            log.append("energy evaluated")

    e1 = guarded_energy(x)
    e2 = guarded_energy(x[::-1] * 0.5)
    return e1 + e2 * len(log)


@program(np.array([0.5, 1.5, 2.5]), hessian=True, nested=True)
def assertions_and_a_log_line_on_values(x):
    r = np.linalg.norm(x)
    assert r > 0, "a zero vector"
    assert np.all(np.isfinite(x)), f"not finite: {x}"
    energy = np.sum(x**2) / r + np.log(r)
    line = f"r = {r:.4f}, energy = {energy:.6e}, first = {x[0]:+.3g}; " + "max %.2f" % np.max(x) + str(x[1])  # noqa: UP031
    assert "r = " in line
    return energy * (1.0 + 0.0 * len(line))


# ----- match --------------------------------------------------------------------------------------


LAYERS = (
    {"kind": "dense", "scale": 0.5},
    ("poly", 1.0, -0.3, 0.05),
    {"kind": "activation", "name": "tanh"},
    ("shift", 0.2),
    {"kind": "activation", "name": "softplus"},
)


@program(np.array([0.3, -0.9, 1.4]), hessian=True, nested=True, refuses={"source": MATCH})
def match_on_structure_of_layer_specs(x):
    h = x
    for spec in LAYERS:
        match spec:
            case {"kind": "dense", "scale": s}:
                h = s * np.roll(h, 1) + h
            case ("poly", *coeffs):
                h = sum(c * h**k for k, c in enumerate(coeffs))
            case {"kind": "activation", "name": "tanh"}:
                h = np.tanh(h)
            case {"kind": "activation", "name": name} if name == "softplus":
                h = np.log1p(np.exp(h))
            case ("shift", float(b)):
                h = h + b
            case _:
                raise ValueError(spec)
    return np.sum(h**2)


@program(np.array([0.4, 1.7, -0.6, 3.1]), hessian=True, refuses={"source": MATCH})
def match_on_values_with_guards(x):
    total = 0.0
    for i, v in enumerate(x):
        match i % 3, v:
            case (0, w) if w > 1.0:
                total = total + w**0.5
            case (0, w):
                total = total + w**2
            case (1 | 2, w) if w < 0:
                total = total - w**3
            case (_, w):
                total = total + np.log(w)
    return total


# ----- loops --------------------------------------------------------------------------------------


@program(np.array([1.0, -0.2, -0.8, 0.1]), hessian=True, nested=True)
def for_else_search_for_a_sign_change(c):
    grid = np.linspace(0.0, 2.0, 9)
    p = lambda t: c[0] + c[1] * t + c[2] * t**2 + c[3] * t**3  # noqa: E731
    for a, b in zip(grid[:-1], grid[1:]):
        if p(a) * p(b) < 0:
            # one secant step inside the bracket
            root = a - p(a) * (b - a) / (p(b) - p(a))
            break
    else:
        root = grid[-1]
    return root**2 + p(root) * c[0]


@program(2.0, hessian=True, nested=True)
def while_else_newton_square_root(a):
    x, i = 1.0, 0
    while i < 50:
        step = (x * x - a) / (2 * x)
        x = x - step
        if abs(step) < 1e-14:
            break
        i += 1
    else:
        raise RuntimeError("no convergence")
    return x**3 + a * x


@program(np.array([0.0, 0.35, 0.6, 1.4, 1.55, 2.7]), hessian=True, nested=True)
def nested_loops_with_break_and_continue_cutoff_pairs(pos):
    cutoff = 1.0
    energy = 0.0
    order = np.argsort(pos)
    for a in range(len(order)):
        i = order[a]
        for b in range(a + 1, len(order)):
            j = order[b]
            r = pos[j] - pos[i]
            if r > cutoff:
                break  # sorted: the rest are farther
            if r < 0.2:
                continue
            energy = energy + (cutoff - r) ** 3 / r
    return energy


@program(np.array([0.5, 1.7, -0.3, 2.4, 0.8]), hessian=True, nested=True)
def walrus_in_if_any_and_while(x):
    total = 0.0
    if (r := np.sqrt(np.sum(x**2))) > 1.0:
        total = total + r**2
    if any((big := v) > 2.0 for v in x):  # the walrus binds in the enclosing scope
        total = total + big**3
    i = 0
    while (rest := np.sum(x[i:])) > 1.0:
        total = total + rest * x[i]
        i += 1
    return total + [y for v in x if (y := np.tanh(v)) > 0.5][0]


# ----- recursion and closures ---------------------------------------------------------------------


def cos_by_nested_horner(x, n):
    result = 1.0
    for k in range(n, 0, -1):
        result = 1.0 - x * x / ((2 * k) * (2 * k - 1)) * result
    return result


def is_even_depth(x, n):
    return x if n == 0 else is_odd_depth(np.sin(x) + 0.5 * x, n - 1)


def is_odd_depth(x, n):
    return x**2 if n == 0 else is_even_depth(np.cos(x) * x, n - 1)


@program(0.9, hessian=True, nested=True)
def mutual_recursion_of_two_maps(x):
    return is_even_depth(x, 5) + is_odd_depth(x, 4) + cos_by_nested_horner(x, 6)


def cf_even(x, depth):
    return 1.0 if depth == 0 else 1.0 + x / cf_odd(x, depth - 1)


def cf_odd(x, depth):
    return 2.0 if depth == 0 else 2.0 + x / cf_even(x, depth - 1)


@program(np.array([0.4, 1.3]), hessian=True, nested=True)
def mutual_recursion_continued_fraction(x):
    return cf_even(x[0], 8) * cf_odd(x[1], 7) + cf_even(x[0] * x[1], 3)


@program(np.array([0.5, -0.2, 0.9, 1.3]), hessian=True, nested=True, refuses={"source": NONLOCAL})
def nonlocal_running_statistics_callback(x):
    n, mean, m2 = 0, 0.0, 0.0

    def observe(v):
        nonlocal n, mean, m2  # Welford's running mean and variance
        n += 1
        delta = v - mean
        mean = mean + delta / n
        m2 = m2 + delta * (v - mean)

    for v in x:
        observe(np.exp(v))
    return m2 / (n - 1) + mean**2


@program(np.array([0.3, 0.7, 1.1]), hessian=True, nested=True)
def closures_made_in_a_loop_with_default_arguments(x):
    powers = [lambda v, k=k: v**k / k for k in range(1, 4)]
    scale = np.sum(x)
    scaled = [lambda v, f=f: scale * f(v) for f in powers]
    return sum(f(xi) for f, xi in zip(scaled, x)) + sum(p(scale) for p in powers)


@program(np.array([0.3, 0.7]), refuses={"source": "default value"})
def lambda_default_capturing_a_differentiated_value(x):
    weights = [lambda v, c=c: c * np.sin(v) for c in x]
    return sum(w(1.2) for w in weights) * x[0]


# ----- arguments ----------------------------------------------------------------------------------


def forward_call(f, *args, **kwargs):
    return f(*args, **kwargs)


def logged(f):
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return forward_call(f, *args, **kwargs)

    return wrapper


@logged
def gaussian_nll(x, mu, *, sigma, weight=1.0):
    return weight * np.sum(0.5 * ((x - mu) / sigma) ** 2 + np.log(sigma))


@program(np.array([0.4, 0.1, 1.2]), 0.5, hessian=True, nested=True)
def args_kwargs_forwarding_through_a_decorator(theta, sigma):
    data = np.array([0.3, 0.8, -0.2, 1.1])
    opts = {"sigma": sigma, "weight": 2.0}
    total = gaussian_nll(data, theta[0], **opts) + gaussian_nll(data, *theta[1:2], sigma=theta[2])
    return total + forward_call(np.dot, theta, theta)


def smooth_penalty(x, lo, hi, *, sharpness=10.0, power=2):
    return np.sum(np.log1p(np.exp(sharpness * (lo - x))) ** power + np.log1p(np.exp(sharpness * (x - hi))) ** power)


@program(np.array([0.1, 0.5, 0.95]), hessian=True, nested=True)
def keyword_only_defaults_and_partial_of_partial(x):
    unit = functools.partial(smooth_penalty, lo=0.0, hi=1.0)
    soft = functools.partial(unit, sharpness=4.0)
    cubic = functools.partial(soft, power=3)
    return unit(x) + soft(x * 1.1) + cubic(x=x[::-1])


def model(t, amplitude, rate, offset=0.0):
    return amplitude * np.exp(-rate * t) + offset


@program(np.array([1.3, 0.4, 0.1]), hessian=True, nested=True)
def kwargs_dict_built_from_values(p):
    t = np.linspace(0.0, 3.0, 7)
    y = 1.2 * np.exp(-0.5 * t) + 0.05
    params = dict(zip(("amplitude", "rate", "offset"), p))
    fit = model(t, **params)
    no_offset = {k: v for k, v in params.items() if k != "offset"}
    return np.sum((fit - y) ** 2) + np.sum(model(t, **no_offset) ** 2) * 0.01


# ----- dicts, sets, collections -------------------------------------------------------------------


@program(np.array([0.4, 1.6, -0.7, 2.3, 0.9]), hessian=True, nested=True)
def dict_and_set_comprehensions(x):
    names = ("a", "b", "c", "d", "e")
    params = {n: v for n, v in zip(names, x)}
    squares = {n: v**2 for n, v in params.items() if v > 0}
    large = {n for n, v in params.items() if abs(v) > 1.0}
    inverted = {round(float(i)): n for i, n in enumerate(names)}
    return sum(squares.values()) + sum(params[n] for n in sorted(large)) * params[inverted[0]]


@program(np.array([0.3, 1.2, -0.5, 0.8]), hessian=True, nested=True, refuses={"source": "setdefault"})
def dict_setdefault_get_update_pop(x):
    stats = {}
    for i, v in enumerate(x):
        stats.setdefault(i % 2, []).append(v)
    totals = {k: sum(vs) for k, vs in stats.items()}
    totals.update({"bias": 0.5 * x[0]})
    bias = totals.pop("bias")
    return totals.get(0, 0.0) * totals.get(1, 0.0) + bias**2 + totals.get(7, 1.0)


@program(np.array([0.12, 0.57, 1.33, 0.81, 1.74, 0.45]), hessian=True, nested=True, refuses={"source": APPEND_TO_ITEM})
def defaultdict_groups_by_floor_bins(x):
    groups = collections.defaultdict(list)
    for v in x:
        groups[math.floor(v * 2.0)].append(v)  # bins of width 0.5
    return sum(len(vs) * np.var(np.stack(vs)) + np.mean(np.stack(vs)) ** 2 for vs in groups.values())


@program(np.array([0.2, 0.9, -0.4, 1.3]), hessian=True, refuses={"source": NO_RULE})
def deque_appendleft_and_rotate_ring_buffer(x):
    ring = collections.deque([0.0, 0.0, 0.0])
    total = 0.0
    for v in x:
        ring.appendleft(v)
        ring.pop()
        ring.rotate(1)
        total = total + ring[0] * 0.5 + ring[1] * ring[2]
    return total + sum(ring) ** 2


@program(np.array([0.9, 0.3, 1.7, 0.5]), hessian=True, refuses={"source": NO_RULE})
def ordered_dict_as_an_lru_of_values(x):
    cache = collections.OrderedDict()
    total = 0.0
    for i, key in enumerate((0, 1, 0, 2, 3, 1)):
        if key in cache:
            cache.move_to_end(key)
            total = total + cache[key] ** 2
        else:
            cache[key] = np.exp(x[key] * 0.5) + i
            if len(cache) > 2:
                cache.popitem(last=False)
    return total + sum(cache.values())


@program(np.array([0.9, 0.3, 1.7, 0.5, 1.1]), hessian=True, nested=True)
def heapq_merges_smallest_values(x):
    heap = []
    for i, v in enumerate(x):
        heapq.heappush(heap, (v**2, i))
    smallest = [heapq.heappop(heap) for _ in range(2)]
    rest = heapq.nsmallest(2, x, key=lambda v: -v)
    return sum(s * (i + 1) for s, i in smallest) + rest[0] * rest[1]


@program(np.array([0.3, 1.2, 2.2]), hessian=True, nested=True)
def bisect_locates_values_in_a_piecewise_quadratic(t):
    coeffs = [(1.0, 0.5), (0.8, -0.2), (1.5, 0.3), (0.4, 0.9), (1.1, -0.4)]
    total = 0.0
    for v in t:
        i = bisect.bisect_right(KNOTS, v) - 1
        a, b = coeffs[i]
        s = v - KNOTS[i]
        total = total + a * s**2 + b * s
    return total


@program(np.array([0.3, -1.4, 0.8, 2.1]), np.array([1.0, 0.5, 2.0, 0.25]), hessian=True, nested=True)
def sorted_min_max_with_key_on_values(x, w):
    scores = {f"feature{i}": xi * wi for i, (xi, wi) in enumerate(zip(x, w))}
    best_name, best = max(scores.items(), key=lambda kv: kv[1])
    closest = min(x, key=lambda v: abs(v - 1.0))
    ranked = sorted(zip(x, w), key=lambda p: p[0] * p[1], reverse=True)
    return best + closest**2 + sum(r * a * b for r, (a, b) in enumerate(ranked)) + len(best_name)


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: float


@program(np.array([0.5, -0.3, 0.8]), 0.1, hessian=True, nested=True)
def copy_and_deepcopy_of_parameter_structures(w, b):
    params = {"layers": [Layer(w, b), Layer(w * 2.0, b - 1.0)], "scale": 1.5}
    shallow = copy.copy(params)
    deep = copy.deepcopy(params)
    shifted = [Layer(layer.w, layer.b + 0.2) for layer in deep["layers"]]
    x = np.array([1.0, 0.4, -0.7])
    out = sum(np.tanh(layer.w @ x + layer.b) for layer in shallow["layers"])
    out2 = sum(np.tanh(layer.w @ x + layer.b) ** 2 for layer in shifted)
    return out * deep["scale"] + out2


# ----- math and builtins --------------------------------------------------------------------------


@program(0.8, 1.3, hessian=True, nested=True, refuses={"tape": MATH_ON_TAPE, "forward": MATH_FORWARD})
def math_module_functions_on_scalars(x, y):
    r = math.hypot(x, y)
    angle = math.atan2(y, x)
    tail = math.erfc(x) + math.log1p(y * y) + math.expm1(-x)
    smooth = math.exp(-r) * math.cos(angle) + math.sqrt(r) * math.tanh(x - y)
    return smooth + tail + math.pow(x, 2.5) + math.log(y, 2.0)


@program(np.array([0.1, 1e-3, 2.5, -0.7]), hessian=True, refuses={"tape": MATH_ON_TAPE, "forward": MATH_FORWARD})
def math_fsum_prod_and_dist(x):
    total = math.fsum(v * v for v in x)
    product = math.prod(1.0 + v for v in x)
    dist = math.dist((x[0], x[1]), (x[2], x[3]))
    return total + product + dist + math.fsum([math.sin(v) for v in x])


@program(1.37, 0.6, hessian=True, nested=True)
def builtins_abs_pow_divmod_round_on_scalars(x, y):
    q, r = divmod(x, 0.5)  # r = x - 0.5 q, with q constant near x
    rounded = round(x, 1)  # constant near x
    total = abs(y - x) + pow(x, 3) + pow(y, x) + r**2 * q + rounded * y
    return total + max(x, y, 0.2) * min(x, y) + sum([x, y], start=1.0)


@program(np.array([0.73, 1.31, 2.45]), hessian=True, nested=True)
def int_truncation_as_a_table_index(t):
    dt = 0.5
    table = np.array([0.0, 0.4, 0.7, 1.5, 1.1, 0.6])
    total = 0.0
    for v in t:
        i = int(v / dt)  # the interval holding v
        frac = v / dt - i
        total = total + (table[i] * (1 - frac) + table[i + 1] * frac) ** 2 + v * frac
    return total


# ----- context managers, logging, globals ---------------------------------------------------------


class Timer:
    """A context manager of the usual kind: it records, but never suppresses."""

    def __init__(self, log):
        self.log = log

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, *exc):
        self.log.append("exit")
        return False


@program(np.array([0.6, -0.4, 1.1]), hessian=True, nested=True)
def user_with_block_around_a_computation(x):
    log = []
    with Timer(log) as timer:
        y = np.tanh(x) * x
        energy = np.sum(y**2)
    with Timer(log):
        energy = energy + np.sum(x**3) * len(timer.log)
    return energy


@contextlib.contextmanager
def damped(log, factor):
    log.append(f"damping {factor}")
    yield factor
    log.append("done")


@program(np.array([0.2, 0.9, -0.5]), hessian=True, nested=True)
def contextlib_context_manager_yielding_a_constant(x):
    log = []
    with damped(log, 0.5) as d:
        x = x * d + np.sin(x)
    return np.sum(x**2) + len(log) * np.sum(x)


@program(np.array([0.5, 2.0, 800.0]), hessian=True)
def errstate_overflow_raises_then_log_sum_exp(x):
    try:
        with np.errstate(over="raise"):
            total = np.log(np.sum(np.exp(x)))
    except FloatingPointError:  # exp overflows: the shifted form
        m = np.max(x)
        total = m + np.log(np.sum(np.exp(x - m)))
    return total + np.sum(x[:2] ** 2)


@program(np.array([0.5, -0.3, 1.2]), hessian=True, nested=True)
def errstate_ignores_a_masked_division(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(np.abs(x) > 0.4, np.sin(x) / x, 1.0 - x**2 / 6.0)
    return np.sum(ratio**2) + np.prod(ratio)


EVALUATIONS = 0


def counted_objective(x):
    global EVALUATIONS
    EVALUATIONS += 1
    return np.sum((x - 1.0) ** 2 * np.arange(1.0, 1.0 + x.size)) + np.sum(x**4)


@program(np.array([0.3, -0.4]), hessian=True, nested=True, refuses={"source": GLOBAL_WRITE})
def global_evaluation_counter_in_gradient_descent(x0):
    global EVALUATIONS
    EVALUATIONS = 0
    x = x0
    for _ in range(4):
        g = 2 * (x - 1.0) * np.arange(1.0, 1.0 + x.size) + 4 * x**3
        x = x - 0.05 * g
        counted_objective(x)
    return counted_objective(x) + 0.001 * EVALUATIONS


HISTORY = []


@program(np.array([0.4, 1.1, -0.6]), hessian=True, nested=True)
def log_lines_appended_to_a_global_list(x):
    HISTORY.clear()
    loss = 0.0
    for step in range(3):
        loss = loss + np.sum(np.cos(x * (step + 1)))
        HISTORY.append("step {}: loss={:.5f} max={:.3e}".format(step, loss, np.max(x)))  # noqa: UP032
    return loss * (1 + 0 * len(HISTORY))


# ----- more classes -------------------------------------------------------------------------------


class Shape:
    def __init__(self, size):
        self.size = size

    @property
    def area(self):
        raise NotImplementedError

    def cost(self, price):
        return self.area * price


class Square(Shape):
    @property
    def area(self):
        return self.size**2


class Disc(Shape):
    def __init__(self, radius):
        super().__init__(2.0 * radius)
        self.radius = radius

    @property
    def area(self):
        return np.pi * self.radius**2

    def cost(self, price):
        return super().cost(price) * 1.1


@program(np.array([0.7, 1.3]), hessian=True, nested=True, refuses={"source": NO_RULE})
def plain_class_hierarchy_with_super_init(sizes):
    shapes = [Square(sizes[0]), Disc(sizes[1]), Square(sizes[1] * 0.5)]
    return sum(s.cost(2.0) for s in shapes) + max(s.size for s in shapes)


@dataclasses.dataclass
class Cell:
    side: float
    density: float = 1.0
    mass: float = dataclasses.field(init=False)

    def __post_init__(self):
        self.mass = self.side**3 * self.density


@program(np.array([0.9, 1.2, 1.05]), hessian=True, refuses={"source": NO_RULE})
def dataclass_post_init_derived_field(sides):
    cells = [Cell(s, density=2.0) for s in sides]
    return sum(c.mass for c in cells) ** 0.5 + cells[0].mass * cells[1].side


@program(np.array([0.5, -0.2, 0.7, 1.1]), hessian=True, nested=True)
def tuple_swaps_and_unpacking_in_a_sort_network(x):
    a, b, c, d = x * np.array([1.0, 1.3, 0.9, 0.7])
    if a > b:
        a, b = b, a
    if c > d:
        c, d = d, c
    if a > c:
        a, c = c, a
    if b > d:
        b, d = d, b
    (lo, hi), mid = (a, d), (b + c) / 2
    return lo * hi + mid**2 + (b - c) ** 2


@program(np.array([0.2, 0.6, 0.1, 0.9]), hessian=True, nested=True)
def zip_enumerate_reversed_and_slices_of_lists(x):
    values = list(x)
    pairs = list(zip(values[::2], values[1::2]))
    tail = values[-2:]
    total = sum(i * a * b for i, (a, b) in enumerate(reversed(pairs), start=1))
    return total + np.prod(np.stack(tail)) + sum(values[1:3]) ** 2


def integrate_with_callback(f, n, *, on_step=None):
    h, total = 1.0 / n, 0.0
    for i in range(n):
        value = f((i + 0.5) * h)
        if on_step is not None:
            on_step(i, value)
        total = total + h * value
    return total


@program(np.array([1.4, 0.3]), hessian=True, nested=True)
def callback_collects_values_into_a_list(p):
    seen = []
    area = integrate_with_callback(lambda t: np.exp(-p[0] * t) * (1 + p[1] * t), 8, on_step=lambda i, v: seen.append(v))
    spread = max(seen) - min(seen)
    return area + spread**2 + integrate_with_callback(lambda t: p[1] * t**2, 4)


# ----- more generators, exceptions and caches -----------------------------------------------------


def running_average():
    total, count, average = 0.0, 0, None
    while True:
        value = yield average
        total = total + value
        count += 1
        average = total / count


@program(np.array([0.4, 1.2, -0.3, 0.8]), hessian=True, nested=True, refuses={"source": "generator.send"})
def coroutine_running_average_by_send(x):
    averager = running_average()
    next(averager)
    path = [averager.send(v**2 + v) for v in x]
    averager.close()
    return sum(a * (i + 1) for i, a in enumerate(path))


def refine(values):
    """Yields midpoints, and returns how many it made."""
    count = 0
    for a, b in zip(values[:-1], values[1:]):
        yield 0.5 * (a + b)
        count += 1
    return count


def with_count(values, out):
    n = yield from refine(values)
    out.append(n)


@program(np.array([0.1, 0.7, 1.6, 2.0]), hessian=True, refuses={"source": GENERATOR})
def yield_from_returns_a_value(x):
    counts = []
    midpoints = list(with_count(np.sin(x), counts))
    return sum(m**2 for m in midpoints) * counts[0] + np.stack(midpoints) @ x[1:]


@dataclasses.dataclass
class Trajectory:
    states: list

    def __iter__(self):
        for i in range(len(self.states)):
            yield self.states[i]

    def __len__(self):
        return len(self.states)

    def __bool__(self):
        return len(self.states) > 0


@program(np.array([0.5, -0.3]), hessian=True, nested=True, refuses={"source": GENERATOR})
def dataclass_whose_iter_is_a_generator(v0):
    states = []
    v = v0
    for _ in range(4):
        v = v + 0.1 * np.stack([v[1], -np.sin(v[0])])
        states.append(v)
    traj = Trajectory(states)
    return sum(np.sum(s**2) for s in traj) / len(traj) if traj else 0.0


class Found(Exception):
    pass


def first_above(values, threshold):
    for v in values:
        if v > threshold:
            raise Found(v)
    return threshold


@program(np.array([0.2, 0.8, 1.7, 2.5]), hessian=True, nested=True, refuses={"source": "Found.args is computed in C"})
def value_carried_out_by_an_exception(x):
    try:
        first_above(x**2, 1.0)
        hit = 0.0
    except Found as found:
        hit = found.args[0]
    return hit * np.sum(x) + np.prod(x)


def checked_ratio(a, b):
    try:
        if b < 0.1:
            raise ValueError("denominator too small")
        return a / b
    except ValueError as err:
        raise ArithmeticError("unstable ratio") from err


@program(np.array([1.3, 0.05, 0.7, 0.4]), hessian=True, nested=True)
def reraise_from_and_an_outer_handler(x):
    total = 0.0
    for a, b in zip(x[:-1], x[1:]):
        try:
            total = total + checked_ratio(a, b)
        except ArithmeticError:
            total = total + a * b
    return total


@program(np.array([0.5, -0.3, 1.2]), hessian=True, nested=True)
def contextlib_suppress_skips_missing_keys(x):
    weights = {"a": 1.5, "c": -0.5}
    total = np.sum(x**2)
    for name, v in zip("abc", x):
        with contextlib.suppress(KeyError):
            total = total + weights[name] * np.exp(v)
    return total


@functools.cache
def legendre_coefficients(n):
    return tuple(np.polynomial.legendre.leg2poly([0.0] * n + [1.0]))


@program(np.array([0.3, -0.6, 0.9]), hessian=True, nested=True)
def lru_cached_table_of_integer_keys(x):
    total = 0.0
    for n in range(1, 4):
        coeffs = legendre_coefficients(n)
        total = total + np.sum(sum(c * x**k for k, c in enumerate(coeffs)) ** 2)
    return total


@functools.lru_cache(maxsize=32)
def cached_decay(rate):
    return np.exp(-rate) / (1.0 + rate)


@program(0.7, hessian=True, nested=True, refuses={"source": NO_RULE, "tape": UNHASHABLE, "forward": UNHASHABLE})
def lru_cache_on_a_function_of_values(rate):
    return cached_decay(rate) + cached_decay(rate) * rate + cached_decay(0.5)


@program(np.array([0.31, 0.52, 0.31, 0.77]), hessian=True, nested=True, refuses={"tape": UNHASHABLE})
def memo_dict_keyed_by_rounded_values(x):
    memo = {}
    total = 0.0
    for v in x:
        key = round(v, 3)
        if key not in memo:
            memo[key] = np.exp(v) * v
        total = total + memo[key]
    unique = sorted({round(v, 3) for v in x})
    return total + len(memo) * 0.1 + sum(unique) * 0.0


class Model:
    calls = 0

    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        Model.calls += 1
        return np.tanh(self.w * x)


@program(np.array([0.4, -0.9]), hessian=True, refuses={"source": NO_RULE})
def class_attribute_call_counter(w):
    m = Model(w)
    before = Model.calls
    y = sum(np.sum(m(t)) for t in (0.5, 1.0, 1.5))
    return y + 0.0 * (Model.calls - before)


@dataclasses.dataclass
class Accumulator:
    total: float = 0.0
    count: int = 0

    def __iadd__(self, v):  # in place, as mutable accumulators do
        self.total = self.total + v
        self.count += 1
        return self

    @property
    def mean(self):
        return self.total / self.count


@program(np.array([0.6, 1.1, -0.2]), hessian=True, nested=True, refuses={"source": "updates the Accumulator in place"})
def in_place_iadd_on_a_mutable_accumulator(x):
    acc = Accumulator()
    for v in x:
        acc += v**2
    return acc.mean + acc.total * x[0]


@dataclasses.dataclass
class Thermostat:
    _temperature: float

    @property
    def temperature(self):
        return self._temperature

    @temperature.setter
    def temperature(self, value):
        self._temperature = max(value, 0.0)


@program(1.2, 0.3, hessian=True, refuses={"source": ATTRIBUTE_WRITE})
def property_setter_in_an_annealing_schedule(t0, rate):
    th = Thermostat(t0)
    energy = 0.0
    for k in range(4):
        th.temperature = th.temperature * (1.0 - rate)
        energy = energy + np.exp(-k / th.temperature)
    return energy


@program(np.array([2.5, 0.8, 5.3]), np.array([0.9, 0.35, 1.6]), hessian=True, nested=True)
def divmod_floor_division_and_modulo_by_values(x, period):
    total = 0.0
    for v, p in zip(x, period):
        q, r = divmod(v, p)  # r = v - q p, q constant near (v, p)
        wrapped = v % p
        whole = v // p
        total = total + r**2 + wrapped * p + whole * p**2 + q
    return total


@program(np.array([2.3, -0.7, 4.1]), hessian=True, nested=True)
def math_floor_ceil_trunc_wrap_angles(x):
    period = 2.0
    total = 0.0
    for v in x:
        wrapped = v - period * math.floor(v / period)
        upper = math.ceil(v) - v
        towards = v - math.trunc(v)
        total = total + np.sin(wrapped) * upper + towards**2
    return total


@program(np.array([0.5, 1.5, -0.4, 0.9]), hessian=True, nested=True, refuses={"source": "sort"})
def list_sort_in_place_with_a_key(x):
    values = [v * (i + 1) for i, v in enumerate(x)]
    values.sort(key=abs)
    copied = copy.copy(values)
    return sum(r * v for r, v in enumerate(copied)) + values[-1] ** 2


@program(np.array([0.3, 0.9, -0.4, 1.2, 0.5, -0.8]), hessian=True, nested=True)
def reduce_operator_and_transpose_with_zip(x):
    rows = [x[0:3], x[3:6]]
    cols = [sum(c) for c in zip(*rows)]
    vecs = [Vec3(*r) for r in rows]
    total = functools.reduce(operator_add, vecs)
    dots = sum(map(lambda pair: pair[0] * pair[1], zip(x[:3], x[3:])))
    return total @ total + dots + functools.reduce(lambda a, b: a * b, cols)


def operator_add(a, b):
    return a + b


@program(np.array([[0.3, -0.5], [0.9, 0.2], [-0.4, 0.7]]), hessian=True, nested=True)
def nested_generator_expressions_and_sum_with_start(M):
    inner = sum(sum(a * b for b in row) for a in M[:, 0] for row in M)
    vec = sum((row * (i + 1) for i, row in enumerate(M)), start=np.zeros(2))
    flags = all(np.isfinite(v) for v in M.ravel()) and any(v > 0.8 for v in M.ravel())
    return inner + vec @ vec + (1.0 if flags else 0.0) * np.sum(M**3)


@program(np.array([0.7, -0.2, 1.3]), hessian=True, refuses={"source": MATCH})
def match_class_patterns_on_a_dataclass(p):
    shapes = [Vec3(p[0], p[1], 0.5), Vec3(p[2], 0.0, p[1]), Vec3(0.2, p[0], p[2])]
    total = 0.0
    for s in shapes:
        match s:
            case Vec3(x=a, y=0.0, z=c):
                total = total + a * c
            case Vec3(x=a, y=b) if a > 0.5:
                total = total + a**2 + b
            case Vec3(x=a, y=b, z=c):
                total = total + a * b * c
    return total


@program(np.array([0.6, -0.2]), hessian=True, nested=True)
def fresh_list_bound_by_tuple_unpacking_then_appended(v0):
    # the source engine refuses the list bound in a tuple assignment (it is not seen to be new), and
    # the entry points take the tape
    history, v = [], v0
    for _ in range(3):
        v = v + 0.2 * np.stack([v[1], -v[0] - 0.3 * v[1] ** 3])
        history.append(v)
    return sum(np.sum(h**2) for h in history)


@dataclasses.dataclass
class Ensemble:
    members: list

    def __iter__(self):
        return iter(self.members)

    def __len__(self):
        return len(self.members)


@program(np.array([0.4, -0.7, 1.1]), hessian=True, nested=True)
def dataclass_container_iterated_by_its_iter_method(w):
    ensemble = Ensemble([w * 2.0, np.tanh(w), w**2])
    total = 0.0
    for member in ensemble:
        total = total + np.sum(member * w)
    return total / len(ensemble) + sum(np.sum(m**2) for m in ensemble)
