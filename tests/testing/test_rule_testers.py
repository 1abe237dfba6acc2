"""The rule testers must fail on wrong rules, with messages that say what is wrong, and pass on correct ones.

Every function here is private to this module, so the rules registered for it affect nothing else.
"""

import dataclasses
import math
import operator
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import nondiff, test_frule, test_rrule, test_scalar

NO = cr.NoTangent()


def register_rrule(f):
    """Decorator: register a (possibly deliberately wrong) reverse rule for f."""

    def decorator(rule):
        cr.rrule.register(f)(rule)
        return rule

    return decorator


# ----- correct rules pass --------------------------------------------------------------------


def scaled_sin(x, scale):
    return scale * math.sin(x)


@register_rrule(scaled_sin)
def rrule_scaled_sin(x, scale):
    s, c = math.sin(x), math.cos(x)

    def scaled_sin_pullback(dy):
        dy = cr.unthunk(dy)
        return NO, dy * scale * c, dy * s

    return scale * s, scaled_sin_pullback


@cr.frule.register(scaled_sin)
def frule_scaled_sin(tangents, x, scale):
    _, dx, dscale = tangents
    s, c = math.sin(x), math.cos(x)
    return scale * s, scale * c * dx + s * dscale


def test_correct_rules_pass():
    test_rrule(scaled_sin, 0.4, 1.5)
    test_frule(scaled_sin, 0.4, 1.5)
    test_rrule(scaled_sin, 0.4, 1.5, output_tangent=cr.Thunk(lambda: 2.0))
    test_frule(scaled_sin, 0.4, 1.5, tangents=(1.0, cr.ZeroTangent()))


def test_the_testers_are_not_collected_as_tests():
    assert test_rrule.__test__ is False and test_frule.__test__ is False and test_scalar.__test__ is False


# ----- each kind of mistake is caught ------------------------------------------------------------


def wrong_sign(x):
    return math.sin(x)


@register_rrule(wrong_sign)
def rrule_wrong_sign(x):
    def wrong_sign_pullback(dy):
        return NO, -cr.unthunk(dy) * math.cos(x)

    return math.sin(x), wrong_sign_pullback


def test_wrong_sign_is_caught():
    with pytest.raises(AssertionError) as info:
        test_rrule(wrong_sign, 0.5)
    message = str(info.value)
    assert "test_rrule(" in message and "wrong_sign" in message
    assert "argument 1 (x): the cotangent does not match finite differences" in message
    assert "max abs error" in message and "max rel error 2" in message


def product(a, b):
    return a * b


@register_rrule(product)
def rrule_product_wrong_second_partial(a, b):
    def product_pullback(dy):
        dy = cr.unthunk(dy)
        return NO, dy * b, dy * b  # the second partial should be dy * a

    return a * b, product_pullback


def test_wrong_partial_for_the_second_argument_is_caught():
    with pytest.raises(AssertionError, match=r"argument 2 \(b\): the cotangent does not match") as info:
        test_rrule(product, 2.0, 3.0)
    assert "argument 1 (a)" not in str(info.value)


def too_few(a, b):
    return a * b


@register_rrule(too_few)
def rrule_too_few(a, b):
    def too_few_pullback(dy):
        return NO, dy * b  # forgot the cotangent of b

    return a * b, too_few_pullback


def test_too_few_cotangents_are_caught():
    with pytest.raises(AssertionError, match=r"returned 2 cotangents; it must return 1 \+ 2"):
        test_rrule(too_few, 2.0, 3.0)


def no_function_tangent(x):
    return 2 * x


@register_rrule(no_function_tangent)
def rrule_no_function_tangent(x):
    def pullback(dy):
        return (2 * cr.unthunk(dy),)  # the tangent of the function itself is missing

    return 2 * x, pullback


def test_a_missing_function_tangent_is_caught():
    with pytest.raises(AssertionError, match="the tangent of .*no_function_tangent itself first"):
        test_rrule(no_function_tangent, 1.0)


def row_sums(x):
    return x.sum(axis=1)


@register_rrule(row_sums)
def rrule_row_sums_wrong_shape(x):
    def row_sums_pullback(dy):
        dy = cr.unthunk(dy)
        if isinstance(dy, cr.AbstractZero):
            return NO, dy
        return NO, np.asarray(dy)[:, None]  # should broadcast to x's shape (3, 4)

    return x.sum(axis=1), row_sums_pullback


def test_wrong_shape_is_caught():
    with pytest.raises(AssertionError, match=r"argument 1 \(x\): expected an array of shape \(3, 4\)"):
        test_rrule(row_sums, np.ones((3, 4)))


def double(x):
    return 2 * x


@register_rrule(double)
def rrule_double_wrong_dtype(x):
    def double_pullback(dy):
        dy = cr.unthunk(dy)
        if isinstance(dy, cr.AbstractZero):
            return NO, dy
        return NO, 2 * np.asarray(dy, dtype=np.float64)  # float32 must stay float32

    return 2 * x, double_pullback


def test_wrong_dtype_is_caught():
    with pytest.raises(AssertionError, match="expected an array of dtype float32 .* dtype float64"):
        test_rrule(double, np.ones(3, np.float32))
    test_rrule(double, np.ones(3))  # right for float64


def triple(x):
    return 3 * x


@register_rrule(triple)
def rrule_triple_breaks_on_thunks(x):
    def triple_pullback(dy):
        if isinstance(dy, cr.AbstractThunk):
            raise TypeError("cannot multiply a Thunk")  # forgot cr.unthunk(dy)
        return NO, 3 * dy

    return 3 * x, triple_pullback


def test_a_pullback_that_breaks_on_a_thunked_seed_is_caught():
    with pytest.raises(AssertionError, match="the pullback on a Thunk-wrapped seed raised TypeError: cannot multiply"):
        test_rrule(triple, 2.0)
    test_rrule(triple, 2.0, check_thunked_output_tangent=False)


def pick(xs, i):
    return xs[i]


@register_rrule(pick)
def rrule_pick_zero_for_index(xs, i):
    def pick_pullback(dy):
        dy = cr.unthunk(dy)
        if isinstance(dy, cr.AbstractZero):
            return NO, dy, NO
        dxs = np.zeros_like(xs)
        dxs[i] = cr.unthunk(dy)
        return NO, dxs, cr.ZeroTangent()  # an index has no derivative: NoTangent

    return xs[i], pick_pullback


def test_zero_tangent_for_an_integer_index_is_caught():
    with pytest.raises(AssertionError, match=r"argument 2 \(i\): got ZeroTangent\(\) for an integer; use NoTangent"):
        test_rrule(pick, np.arange(4.0), 2)


def choose(flag, a, b):
    return a if flag else b


@register_rrule(choose)
def rrule_choose(flag, a, b):
    def choose_pullback(dy):
        dy = cr.unthunk(dy)
        zero = cr.ZeroTangent()
        return NO, cr.ZeroTangent(), (dy if flag else zero), (zero if flag else dy)

    return choose(flag, a, b), choose_pullback


def test_zero_tangent_for_a_bool_is_caught():
    with pytest.raises(AssertionError, match=r"argument 1 \(flag\): got ZeroTangent\(\) for a bool"):
        test_rrule(choose, True, 1.0, 2.0)


def shifted(x, offset):
    return x + offset


@register_rrule(shifted)
def rrule_shifted(x, offset):
    def shifted_pullback(dy):
        dy = cr.unthunk(dy)
        return NO, dy, dy

    return x + offset, shifted_pullback


def test_nondiff_arguments_must_get_no_tangent():
    test_rrule(shifted, 1.0, 2.0)
    with pytest.raises(AssertionError, match=r"argument 2 \(offset\): an argument marked nondiff has no derivative"):
        test_rrule(shifted, 1.0, nondiff(2.0))


def test_a_missing_rule_is_reported():
    def unruled(x):
        return x

    with pytest.raises(AssertionError, match=r"there is no rrule for .*unruled\(float\)"):
        test_rrule(unruled, 1.0)
    with pytest.raises(AssertionError, match=r"there is no frule for .*unruled\(float\)"):
        test_frule(unruled, 1.0)


def bad_primal(x):
    return x * x


@register_rrule(bad_primal)
def rrule_bad_primal(x):
    def bad_primal_pullback(dy):
        return NO, 2 * x * cr.unthunk(dy)

    return x * x + 1e-6, bad_primal_pullback


def test_a_wrong_primal_is_caught():
    with pytest.raises(AssertionError, match="the primal y: the rule's primal must equal f"):
        test_rrule(bad_primal, 3.0)


def not_a_pair(x):
    return x


@register_rrule(not_a_pair)
def rrule_not_a_pair(x):
    return x


def test_a_rule_that_returns_no_pair_is_caught():
    with pytest.raises(AssertionError, match=r"must return a pair \(y, pullback\)"):
        test_rrule(not_a_pair, 1.0)


def scale_in_place(x):
    return 2 * x


@register_rrule(scale_in_place)
def rrule_scale_in_place(x):
    x *= 2  # writes into the caller's array

    def scale_pullback(dy):
        return NO, 2 * cr.unthunk(dy)

    return x, scale_pullback


def test_a_rule_that_mutates_its_input_is_caught():
    with pytest.raises(AssertionError, match=r"argument 1 \(x\) was mutated by the rule"):
        test_rrule(scale_in_place, np.ones(3))


def negate(x):
    return -x


@register_rrule(negate)
def rrule_negate_mutates_seed(x):
    def negate_pullback(dy):
        dy = cr.unthunk(dy)
        if isinstance(dy, np.ndarray):
            np.negative(dy, out=dy)  # overwrites the caller's cotangent
            return NO, dy
        return NO, -dy

    return -x, negate_pullback


def test_a_pullback_that_mutates_the_seed_is_caught():
    with pytest.raises(AssertionError, match=r"the seed \(output tangent\) was mutated by the pullback"):
        test_rrule(negate, np.ones(3))


def halve(x):
    return x / 2


@register_rrule(halve)
def rrule_halve_reuses_buffer(x):
    buffer = np.zeros_like(x)

    def halve_pullback(dy):
        dy = cr.unthunk(dy)
        if isinstance(dy, cr.AbstractZero):
            return NO, dy
        np.multiply(dy, 0.5, out=buffer)  # every call overwrites the array it returned before
        return NO, buffer

    return x / 2, halve_pullback


def test_a_pullback_that_reuses_its_output_buffer_is_caught():
    with pytest.raises(AssertionError, match="changed by later calls of the pullback"):
        test_rrule(halve, np.ones(3))


def cube(x):
    return x**3


@register_rrule(cube)
def rrule_cube_ignores_zero_seed(x):
    def cube_pullback(dy):
        if isinstance(dy, cr.AbstractZero):
            return NO, 1.0  # a zero seed must give a zero cotangent
        return NO, 3 * x**2 * cr.unthunk(dy)

    return x**3, cube_pullback


def test_a_zero_seed_must_give_zeros():
    with pytest.raises(AssertionError, match=r"a ZeroTangent\(\) seed must give a zero cotangent"):
        test_rrule(cube, 2.0)


def squares(x):
    return x * x


def _squares_rule(add_into_factor):
    def rrule_squares(x):
        def squares_pullback(dy):
            dy = cr.unthunk(dy)

            def add_into(acc):
                acc += add_into_factor * x * dy
                return acc

            return NO, cr.InplaceableThunk(add_into, cr.Thunk(lambda: 2 * x * dy))

        return x * x, squares_pullback

    return rrule_squares


def test_inplaceable_thunks_are_checked_through_iadd():
    def good(x):
        return x * x

    def bad(x):
        return x * x

    cr.rrule.register(good)(_squares_rule(2.0))
    cr.rrule.register(bad)(_squares_rule(3.0))  # add_into disagrees with the value
    test_rrule(good, np.array([1.0, 2.0]))
    with pytest.raises(AssertionError, match="iadd of the cotangent into an owned accumulator must equal add"):
        test_rrule(bad, np.array([1.0, 2.0]))


def complex_scale(z, w):
    return z * w


@register_rrule(complex_scale)
def rrule_complex_scale_without_conj(z, w):
    def complex_scale_pullback(dy):
        dy = cr.unthunk(dy)
        return NO, dy * w, dy * z  # the convention needs dy * conj(w), dy * conj(z)

    return z * w, complex_scale_pullback


def test_complex_rules_follow_the_conjugate_convention():
    test_rrule(operator.mul, 1 + 2j, 0.5 - 1j)
    with pytest.raises(AssertionError, match="does not match finite differences"):
        test_rrule(complex_scale, 1 + 2j, 0.5 - 1j)


# ----- structures, functors, large inputs, float32, ints --------------------------------------


@dataclasses.dataclass
class Line:
    slope: float
    intercept: float
    label: str = "line"


def evaluate(line, x):
    return line.slope * x + line.intercept


@register_rrule(evaluate)
def rrule_evaluate(line, x):
    def evaluate_pullback(dy):
        dy = cr.unthunk(dy)
        return NO, cr.Tangent[Line](slope=dy * x, intercept=dy), dy * line.slope

    return evaluate(line, x), evaluate_pullback


def evaluate_plain(line, x):
    return line.slope * x + line.intercept


@register_rrule(evaluate_plain)
def rrule_evaluate_plain_tuple(line, x):
    def pullback(dy):
        dy = cr.unthunk(dy)
        return NO, (dy * x, dy, NO), dy * line.slope  # a plain tuple is not a tangent of a Line

    return evaluate_plain(line, x), pullback


def evaluate_wrong_field(line, x):
    return line.slope * x + line.intercept


@register_rrule(evaluate_wrong_field)
def rrule_evaluate_wrong_field(line, x):
    def pullback(dy):
        dy = cr.unthunk(dy)
        return NO, cr.Tangent[Line](slope=dy, intercept=dy), dy * line.slope  # slope's partial is x

    return evaluate_wrong_field(line, x), pullback


def test_structural_cotangents():
    test_rrule(evaluate, Line(2.0, 1.0), 3.0)
    with pytest.raises(AssertionError, match=r"expected a structural tangent cr.Tangent\[Line\]"):
        test_rrule(evaluate_plain, Line(2.0, 1.0), 3.0)
    with pytest.raises(AssertionError, match=r"argument 1 \(line\)\.slope: the cotangent does not match"):
        test_rrule(evaluate_wrong_field, Line(2.0, 1.0), 3.0)


@dataclasses.dataclass
class Polynomial:
    coeffs: np.ndarray

    def __call__(self, x):
        return sum(c * x**k for k, c in enumerate(self.coeffs))


@cr.rrule.register(Polynomial)
def rrule_polynomial_call(p, x):
    powers = x ** np.arange(len(p.coeffs))

    def polynomial_pullback(dy):
        dy = cr.unthunk(dy)
        dx = sum(k * c * x ** (k - 1) for k, c in enumerate(p.coeffs) if k)
        return cr.Tangent[Polynomial](coeffs=dy * powers), dy * dx

    return p(x), polynomial_pullback


def test_a_callable_object_gets_its_own_structural_tangent_checked():
    test_rrule(Polynomial(np.array([1.0, 2.0, 3.0])), 0.5)


def add_large(x, y):
    return x + 2 * y


@register_rrule(add_large)
def rrule_add_large(x, y):
    def add_large_pullback(dy):
        dy = cr.unthunk(dy)
        return NO, dy, 2 * dy

    return x + 2 * y, add_large_pullback


def add_large_wrong(x, y):
    return x + 2 * y


@register_rrule(add_large_wrong)
def rrule_add_large_wrong(x, y):
    def pullback(dy):
        dy = cr.unthunk(dy)
        if isinstance(dy, cr.AbstractZero):
            return NO, dy, dy
        wrong = 2 * dy
        wrong[7] = 0.0  # one wrong entry among a hundred
        return NO, dy, wrong

    return x + 2 * y, pullback


def test_large_arguments_are_checked_by_random_projections():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(100), rng.standard_normal(100)
    test_rrule(add_large, x, y)
    with pytest.raises(AssertionError, match=r"(?s)argument 2 \(y\).*random direction.*checked by random projections"):
        test_rrule(add_large_wrong, x, y)


def test_float32_uses_looser_tolerances_and_keeps_dtypes():
    x = np.array([0.5, 1.5, -2.0], np.float32)
    test_rrule(operator.mul, x, np.float32(3.0) * x)
    test_frule(operator.mul, x, x)


def test_integers_used_arithmetically_are_checked_as_floats():
    # the rule gives the integer 3 a float derivative: it is compared with a finite difference in 3.0
    test_rrule(operator.mul, 3, 2.5)
    test_rrule(operator.pow, 2.0, 3)


# ----- test_frule failures -----------------------------------------------------------------------


def fwd_wrong_sign(x):
    return math.exp(x)


@cr.frule.register(fwd_wrong_sign)
def frule_wrong_sign(tangents, x):
    return math.exp(x), -math.exp(x) * tangents[1]


def fwd_three(x):
    return x


@cr.frule.register(fwd_three)
def frule_three(tangents, x):
    return x, tangents[1], None


def fwd_dtype(x):
    return x * 2


@cr.frule.register(fwd_dtype)
def frule_wrong_dtype(tangents, x):
    return x * 2, 2 * np.asarray(tangents[1], dtype=np.float64)


def fwd_zero(x):
    return x + 1


@cr.frule.register(fwd_zero)
def frule_nonzero_for_zero(tangents, x):
    dx = tangents[1]
    return x + 1, 1.0 if isinstance(dx, cr.AbstractZero) else dx


def test_frule_failures_are_caught():
    with pytest.raises(AssertionError, match="the output tangent dy: the output tangent does not match finite"):
        test_frule(fwd_wrong_sign, 0.3)
    with pytest.raises(AssertionError, match=r"must return a pair \(y, dy\)"):
        test_frule(fwd_three, 0.3)
    with pytest.raises(AssertionError, match="the output tangent dy: expected an array of dtype float32"):
        test_frule(fwd_dtype, np.ones(2, np.float32))
    with pytest.raises(AssertionError, match="zero input tangents must be zero"):
        test_frule(fwd_zero, 0.3)


def test_frule_tangent_arguments():
    test_frule(scaled_sin, 0.4, 1.5, tangents=(NO, 1.0, 0.0))
    with pytest.raises(ValueError, match="4 tangents for 2 arguments"):
        test_frule(scaled_sin, 0.4, 1.5, tangents=(1.0, 2.0, 3.0, 4.0))
    test_frule(scaled_sin, 0.4, nondiff(1.5))


# ----- test_scalar -------------------------------------------------------------------------------


def square_holo(z):
    return z * z


cr.scalar_rule(square_holo, lambda z: 2 * z)


def square_not_holo(z):
    return z * z


@register_rrule(square_not_holo)
def rrule_square_no_conj(z):
    def pullback(dy):
        return NO, cr.unthunk(dy) * 2 * z  # right for real z, wrong for complex z (needs conj)

    return z * z, pullback


@cr.frule.register(square_not_holo)
def frule_square(tangents, z):
    return z * z, 2 * z * tangents[1]


def test_scalar_runs_real_and_complex_points():
    test_scalar(square_holo, 0.7, holomorphic=True)
    test_scalar(square_holo, 0.3 - 0.2j)
    test_scalar(square_not_holo, 0.7)  # the real point alone does not see the missing conj
    with pytest.raises(AssertionError, match="(?s)test_rrule.*square_not_holo.*does not match finite differences"):
        test_scalar(square_not_holo, 0.7, holomorphic=True)


# ----- higher-order rules: rrule_via_ad runs on the test engine ---------------------------------


def apply_all(g, xs):
    return [g(x) for x in xs]


@register_rrule(apply_all)
def rrule_apply_all(g, xs):
    results = [cr.rrule_via_ad(g, x) for x in xs]

    def apply_all_pullback(dys):
        dys = cr.unthunk(dys)
        if isinstance(dys, cr.AbstractZero):
            return NO, NO, cr.ZeroTangent()
        pulled = [back(dy)[1] for (_, back), dy in zip(results, dys)]
        return NO, NO, cr.Tangent[list](*pulled)

    return [y for y, _ in results], apply_all_pullback


def apply_all_wrong(g, xs):
    return [g(x) for x in xs]


@register_rrule(apply_all_wrong)
def rrule_apply_all_wrong(g, xs):
    results = [cr.rrule_via_ad(g, x) for x in xs]

    def pullback(dys):
        dys = cr.unthunk(dys)
        return NO, NO, cr.Tangent[list](*[back(dy)[1] for (_, back), dy in zip(results[::-1], dys)])

    return [y for y, _ in results], pullback


def sort_by(xs, key):
    return sorted(xs, key=key)


@register_rrule(sort_by)
def rrule_sort_by(xs, key):
    order = sorted(range(len(xs)), key=lambda i: key(xs[i]))
    # rrule_via_ad is what a real rule would call for the key; here it only sees that the engine is there
    cr.rrule_via_ad(key, xs[order[0]])

    def sort_by_pullback(dys):
        dys = cr.unthunk(dys)
        if isinstance(dys, cr.AbstractZero):
            return NO, dys
        dxs = [0.0] * len(xs)
        for position, i in enumerate(order):
            dxs[i] = dys[position]
        return NO, cr.Tangent[list](*dxs)

    return [xs[i] for i in order], sort_by_pullback


def test_higher_order_rules_use_the_test_engine():
    test_rrule(apply_all, lambda x: x**3 + math.sin(x), [0.5, 1.5])
    test_rrule(apply_all, math.exp, [0.5, -1.0])  # math.exp has a rule: the engine uses it
    with pytest.raises(AssertionError, match=r"argument 2 \(xs\)\[0\]: the cotangent does not match"):
        test_rrule(apply_all_wrong, lambda x: x * x, [0.5, 1.5])
    test_rrule(sort_by, [3.0, 1.0, 2.0], fkwargs={"key": lambda v: -v})


def forgets_seed(x):
    return 5 * x


@register_rrule(forgets_seed)
def rrule_forgets_seed(x):
    def forgets_seed_pullback(dy):
        if isinstance(cr.unthunk(dy), cr.AbstractZero):
            return NO, cr.ZeroTangent()
        return NO, 5.0  # forgot to multiply by dy: right only for dy == 1

    return 5 * x, forgets_seed_pullback


def test_a_pullback_that_ignores_the_seed_size_is_caught_even_with_a_unit_seed():
    with pytest.raises(AssertionError, match="the pullback must be linear in the seed"):
        test_rrule(forgets_seed, 2.0, output_tangent=1.0)


def test_cr_testing_is_reachable_from_the_package():
    # a fresh interpreter: in this one chainrules.testing is already imported
    src = pathlib.Path(cr.__file__).resolve().parents[1]
    code = "import chainrules as cr, operator; cr.testing.test_rrule(operator.mul, cr.testing.nondiff(True), 2.0)"
    env = {**os.environ, "PYTHONPATH": str(src)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


@cr.frule.register(Polynomial)
def frule_polynomial_call(tangents, p, x):
    dp, dx = tangents
    dp = cr.unthunk(dp)
    dcoeffs = 0.0 if isinstance(dp, cr.AbstractZero) else dp.coeffs
    powers = x ** np.arange(len(p.coeffs))
    slope = sum(k * c * x ** (k - 1) for k, c in enumerate(p.coeffs) if k)
    return p(x), float(np.sum(dcoeffs * powers)) + slope * dx


def test_frule_of_a_callable_object_moves_its_fields_too():
    p = Polynomial(np.array([1.0, 2.0, 3.0]))
    test_frule(p, 0.5)
    test_frule(p, 0.5, tangents=(cr.Tangent[Polynomial](coeffs=np.array([1.0, 0.0, -1.0])), 2.0))


@dataclasses.dataclass
class Spring:
    k: float
    rest: float

    def energy(self, x):
        return 0.5 * self.k * np.sum((np.diff(x) - self.rest) ** 2)


@cr.rrule.register(Spring.energy)
def rrule_spring_energy(spring, x):
    stretch = np.diff(x) - spring.rest

    def spring_energy_pullback(dy):
        dy = cr.unthunk(dy)
        if cr.iszero(dy):
            return NO, cr.ZeroTangent(), cr.ZeroTangent()
        force = spring.k * stretch * dy
        dx = np.concatenate([[0.0], force]) - np.concatenate([force, [0.0]])
        return NO, cr.Tangent[Spring](k=0.5 * np.sum(stretch**2) * dy, rest=-np.sum(force)), dx

    return 0.5 * spring.k * np.sum(stretch**2), spring_energy_pullback


@cr.frule.register(Spring.energy)
def frule_spring_energy(tangents, spring, x):
    _, dspring, dx = tangents
    stretch = np.diff(x) - spring.rest
    dk, drest = (0.0, 0.0) if cr.iszero(dspring) else (dspring.k, dspring.rest)
    dstretch = (0.0 if cr.iszero(dx) else np.diff(dx)) - drest
    return 0.5 * spring.k * np.sum(stretch**2), 0.5 * dk * np.sum(stretch**2) + spring.k * np.sum(stretch * dstretch)


@dataclasses.dataclass
class LooseSpring:
    k: float

    def energy(self, x):
        return 0.5 * self.k * np.sum(x**2)


@cr.rrule.register(LooseSpring.energy)
def rrule_loose_spring_energy_wrong_k(spring, x):
    def loose_spring_energy_pullback(dy):
        dy = cr.unthunk(dy)
        return NO, cr.Tangent[LooseSpring](k=np.sum(x**2) * dy), spring.k * x * dy  # (k's is twice the true one)

    return 0.5 * spring.k * np.sum(x**2), loose_spring_energy_pullback


@cr.frule.register(LooseSpring.energy)
def frule_loose_spring_energy_without_k(tangents, spring, x):
    _, _, dx = tangents  # (drops the tangent of k)
    return 0.5 * spring.k * np.sum(x**2), spring.k * np.sum(x * cr.unthunk(dx))


def test_a_bound_method_gets_its_objects_tangent_checked():
    # the tangent of spring.energy is the tangent of spring (as the engines give it), checked
    # against finite differences of its fields, as a callable object's
    x = np.array([0.0, 1.1, 2.3, 2.9])
    test_rrule(Spring(2.0, 1.0).energy, x)
    test_frule(Spring(2.0, 1.0).energy, x)
    test_frule(Spring(2.0, 1.0).energy, x, tangents=(cr.Tangent[Spring](k=1.0, rest=-0.5), np.ones(4)))
    itself = r"the tangent of .*LooseSpring\.energy itself .*does not match finite differences"
    with pytest.raises(AssertionError, match=f"(?s){itself}"):
        test_rrule(LooseSpring(2.0).energy, x)
    with pytest.raises(AssertionError, match="the output tangent does not match finite differences"):
        test_frule(LooseSpring(2.0).energy, x)


def count_items(xs):
    return len(xs)


cr.non_differentiable(count_items)


def test_non_differentiable_functions():
    test_rrule(count_items, [1.0, 2.0])
    test_frule(count_items, [1.0, 2.0])


def test_the_rule_can_be_swapped_for_an_engine():
    from chainrules.testing import fd_pullback_full

    test_rrule(math.sin, 0.5, rule=fd_pullback_full)

    def negated(f, *args):
        y, back = cr.rrule(f, *args)
        return y, lambda dy: tuple(-cr.unthunk(c) for c in back(dy))

    with pytest.raises(AssertionError, match="does not match finite differences"):
        test_rrule(math.sin, 0.5, rule=negated)


def test_the_fd_engine_gives_structured_callables_a_tangent():
    from chainrules.testing import fd_pullback_full

    @dataclasses.dataclass
    class Scaler:
        factor: float

        def __call__(self, x):
            return self.factor * x

    y, back = fd_pullback_full(Scaler(3.0), 2.0)
    d_scaler, dx = back(1.0)
    assert y == 6.0 and dx == pytest.approx(3.0) and d_scaler.factor == pytest.approx(2.0)
    assert fd_pullback_full(lambda x: 2 * x, 1.0)[1](1.0)[0] == NO


def varargs_sum(*xs):
    return sum(xs)


@register_rrule(varargs_sum)
def rrule_varargs_sum(*xs):
    def pullback(dy):
        dy = cr.unthunk(dy)
        return (NO, *[dy] * (len(xs) - 1), 2 * dy)  # the last one is wrong

    return sum(xs), pullback


def test_varargs_arguments_are_named_by_position():
    with pytest.raises(AssertionError, match=r"argument 3 \(\*xs\[2\]\): the cotangent does not match"):
        test_rrule(varargs_sum, 1.0, 2.0, 3.0)


def test_assert_approx_reports_every_leaf_with_its_path():
    from chainrules.testing import assert_approx

    expected = cr.Tangent[dict]({"w": np.array([1.0, 2.0]), "b": 0.5})
    assert_approx(cr.Tangent[dict]({"w": np.array([1.0, 2.0 + 1e-12]), "b": 0.5}), expected)
    with pytest.raises(AssertionError) as info:
        assert_approx(cr.Tangent[dict]({"w": np.array([1.0, 2.5]), "b": cr.ZeroTangent()}), expected, name="grad")
    message = str(info.value)
    assert "grad['w']" in message or "grad.w" in message
    assert "max abs error 0.5" in message and "expected 0.5, got ZeroTangent()" in message
    with pytest.raises(AssertionError, match="expected shape"):
        assert_approx(np.ones(3), np.ones(2))
    with pytest.raises(AssertionError, match="not all finite"):
        assert_approx(np.array([np.nan]), np.array([np.nan]))


def test_numpy_scalars():
    test_rrule(operator.mul, np.float64(1.5), np.float64(2.0))
    test_rrule(operator.mul, np.float32(1.5), np.float32(2.0))
    problems = cr.testing.checks.tangent_problems(np.float32(1.0), 1.0, "dx")
    assert problems == ["dx: expected a float32 scalar (the primal's dtype), got a float 1"]
    assert cr.testing.checks.tangent_problems(np.float64(1.0), 1.0, "dx") == []


def test_primal_rtol_lets_a_rule_evaluate_the_function_another_way():
    def scaled(x):
        return 3.0 * x

    def rrule_off(x):  # a primal off by 1e-10 of itself: beyond rounding, within primal_rtol
        return 3.0 * x * (1 + 1e-10), lambda dy: (cr.NoTangent(), 3.0 * dy)

    def frule_off(tangents, x):
        return 3.0 * x * (1 + 1e-10), 3.0 * tangents[1]

    x = np.array([1.0, -2.0])
    with pytest.raises(AssertionError, match="must equal f\\(\\*args\\) to rounding"):
        test_rrule(scaled, x, rule=lambda f, *a: rrule_off(*a))
    with pytest.raises(AssertionError, match="must equal f\\(\\*args\\) to rounding"):
        test_frule(scaled, x, rule=lambda t, f, *a: frule_off(t, *a))
    test_rrule(scaled, x, rule=lambda f, *a: rrule_off(*a), primal_rtol=1e-9)
    test_frule(scaled, x, rule=lambda t, f, *a: frule_off(t, *a), primal_rtol=1e-9)
