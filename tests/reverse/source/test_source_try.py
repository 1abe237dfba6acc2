"""``try``/``except``/``else``/``finally`` in the source engine: the reverse pass goes back through
what ran, the statements of the body before the exception, the handler that caught it, ``else``
and ``finally``. Each function is checked against finite differences and against the tape, at
points where each path runs, with the source engine itself (no fallback to the tape)."""

import contextlib
import math

import numpy as np
import pytest

import chainrules as cr
from chainrules import api
from chainrules.reverse import source, trace
from chainrules.testing import fd_jacobian


def log_or_square(x):
    try:
        y = np.log(x) * 2.0
        if x > 5.0:
            raise ValueError("too large")
        z = y * x
    except ValueError:
        z = x**2
    return z


def cholesky_or_ridge(A, b):
    try:
        L = np.linalg.cholesky(A)
        z = np.linalg.solve(L, b)
    except np.linalg.LinAlgError:
        z = np.linalg.solve(A + 10.0 * np.eye(2), b)
    return np.sum(z**2)


def all_four_blocks(x):
    total = x * 0.5
    try:
        r = 1.0 / max(x - 1.0, 0.0)  # ZeroDivisionError at x <= 1
        total = total + r * x
    except ZeroDivisionError as error:
        assert isinstance(error, ZeroDivisionError)
        total = total + x**3
    else:
        total = total * x
    finally:
        total = total + math.sin(x)  # math.sin: the tape refuses it, the source engine runs it
    return total


def reciprocals_in_a_loop(x):
    total = 0.0
    for i in range(4):
        try:
            r = 1.0 / (x - i)
            if abs(r) > 5:
                raise OverflowError
            total = total + r * x
        except (ZeroDivisionError, OverflowError):
            total = total + x**2
            continue
        finally:
            total = total * 1.1
        total = total + 0.5 * x
    return total


def returns_from_each_block(x):
    try:
        if x > 2.0:
            return x**2
        y = np.sqrt(x - 1.0) if x > 1.0 else None
        if y is None:
            raise ValueError
    except ValueError:
        return -x
    else:
        return y * x
    finally:
        x = x * 0.0  # (rebinds the parameter: the returned value was computed before)


def nested(x):
    try:
        y = x**2
        try:
            y = y / max(x - 2.0, 0.0)  # ZeroDivisionError at x <= 2
        except ZeroDivisionError:
            y = y * x
        y = y * 3.0
        if y > 20.0:
            raise ArithmeticError
    except ArithmeticError:
        y = y * 7.0
    return y


def re_raised(x):
    try:
        y = x**2
        try:
            y = y / max(x - 2.0, 0.0)
        except ZeroDivisionError:
            y = y * x
            raise  # leaves the inner `try` from its handler
    except ZeroDivisionError:
        y = y * 7.0
    return y


def half_way_through_a_loop(x):
    total = 0.0
    try:
        for i in range(4):
            total = total + x**i
            if i == 2 and x > 1.0:
                raise RuntimeError  # stops the loop in its third iteration, half way through it
            total = total * 1.5
    except RuntimeError:
        total = total * 2.0
    return total


def loops_in_loops(x):
    acc = x
    for k in range(2):
        try:
            for _ in range(3):
                t = acc * x
                for j in range(2):
                    u = t + j
                    if u > 4.0 + k:
                        raise ValueError
                    t = u * 0.9
                acc = acc + t
        except ValueError:
            acc = acc * 1.1
    return acc


def while_and_with(x):
    y = x
    n = 0
    try:
        while n < 5:
            with np.errstate(all="ignore"):
                y = y * x
                if y > 3.0:
                    raise OverflowError
            n += 1
    except OverflowError:
        y = y + 1.0
    return y


def nested_in_a_loop(x):
    total = 0.0
    try:
        for i in range(4):
            try:
                total = total + x / max(x - i, 0.0)  # ZeroDivisionError at x <= i
            except ZeroDivisionError:
                total = total + x**2
                if i == 3:
                    raise  # leaves the inner `try`, and the loop, from the handler
            finally:
                total = total * 1.1
    except ZeroDivisionError:
        total = total * 3.0
    return total


def returns_through_an_empty_finally(x):
    total = 0.0
    try:
        for i in range(3):
            total = total + x**i
            if total > 2.0:
                return total * x  # through a `finally` that does nothing
    finally:
        pass
    return total


POINTS = [
    (log_or_square, [1.3, 6.0]),
    (returns_through_an_empty_finally, [0.5, 1.5]),
    (all_four_blocks, [0.5, 2.5]),
    (reciprocals_in_a_loop, [1.0, 1.1, 2.5]),
    (returns_from_each_block, [0.5, 1.5, 3.0]),
    (nested, [0.5, 1.8, 2.5, 3.0]),
    (half_way_through_a_loop, [0.5, 1.5]),
    (loops_in_loops, [0.5, 1.2, 1.9]),
    (while_and_with, [1.1, 1.5, 2.5]),
    (nested_in_a_loop, [0.5, 2.5, 3.5]),
    (re_raised, [1.5, 3.0]),
]


@pytest.mark.parametrize("f, points", POINTS, ids=lambda v: getattr(v, "__name__", None))
def test_gradients_follow_what_ran(f, points):
    for x in points:
        y, back = source.pullback_full(f, x)  # the source engine itself, not the tape
        assert y == f(x)
        (grad,) = cr.gradient(f, x)
        assert back(1.0)[1] == pytest.approx(grad, rel=1e-14, abs=0)
        assert back(1.0)[1] == pytest.approx(fd_jacobian(f, x).item(), rel=1e-6, abs=1e-8)
        if f is not all_four_blocks:  # (math.sin: the tape refuses it)
            assert grad == pytest.approx(cr.gradient(f, x, engine="tape")[0], rel=1e-14)
    assert not api._chosen_before(f, api._ON_THE_TAPE)


def test_a_library_exception_chooses_the_path():
    b = np.array([1.0, 2.0])
    for A in (np.array([[2.0, 0.3], [0.3, 1.0]]), np.array([[1.0, 2.0], [2.0, 1.0]])):  # the second is not definite
        dA, db = cr.gradient(cholesky_or_ridge, A, b)
        tA, tb = cr.gradient(cholesky_or_ridge, A, b, engine="tape")
        np.testing.assert_allclose(dA, tA, rtol=1e-13)
        np.testing.assert_allclose(db, tb, rtol=1e-13)
        np.testing.assert_allclose(db, fd_jacobian(lambda v, A=A: cholesky_or_ridge(A, v), b)[0], rtol=1e-6)


def test_math_functions_inside_try_work_in_every_mode():
    # (the tape refuses math.sin of its values; before, the source engine refused `try`)
    x = 2.5
    expected = fd_jacobian(all_four_blocks, x).item()
    assert cr.gradient(all_four_blocks, x)[0] == pytest.approx(expected, rel=1e-7)
    assert cr.derivative(all_four_blocks, x) == pytest.approx(expected, rel=1e-7)
    second = fd_jacobian(lambda z: cr.gradient(all_four_blocks, z)[0], x).item()
    assert cr.hessian(all_four_blocks, np.float64(x)) == pytest.approx(second, rel=1e-6)


def test_second_derivatives_and_jacobians_through_try():
    for x in (1.3, 6.0):
        second = fd_jacobian(lambda z: cr.gradient(log_or_square, z)[0], x).item()
        assert cr.hessian(log_or_square, x) == pytest.approx(second, rel=1e-6)

    def rows(v):
        out = []
        with np.errstate(divide="raise"):
            for i in range(3):
                try:
                    out.append(v[i] / np.maximum(v[i] - 1.0, 0.0))  # FloatingPointError at v[i] <= 1
                except FloatingPointError:
                    out.append(v[i] ** 2)
        return np.stack(out)

    v = np.array([0.5, 1.5, 2.0])
    J = cr.jacobian(rows, v, mode="reverse")
    np.testing.assert_allclose(J, fd_jacobian(rows, v), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(J, cr.jacobian(rows, v, mode="forward"), rtol=1e-14)


def test_the_engines_own_errors_pass_through_the_handlers():
    unruled = np.frompyfunc(lambda t: t * 2.0, 1, 1)

    def swallows_everything(x):
        try:
            y = unruled(x)
        except Exception:  # would swallow a NoRuleError raised for the call
            y = x
        return y * x

    x = np.array([0.5, 1.5])
    with pytest.raises(cr.NoRuleError, match="frompyfunc|vectorized|lambda"):
        source.pullback_full(swallows_everything, x)


def test_a_handler_may_re_raise():
    for x in (1.5, 3.0):  # the inner handler re-raises; no exception
        y, back = source.pullback_full(re_raised, x)
        assert back(1.0)[1] == pytest.approx(fd_jacobian(re_raised, x).item(), rel=1e-6)
        assert back(1.0)[1] == pytest.approx(cr.gradient(re_raised, x, engine="tape")[0], rel=1e-14)
    with pytest.raises(ZeroDivisionError):  # out of the function, as Python raises it
        source.pullback_full(lambda x: re_raised(x) / 0.0, 3.0)


def test_an_exception_a_with_block_suppresses_is_refused():
    def suppressed(x):
        y = x * 2.0
        with contextlib.suppress(ValueError):
            y = x**3
            if x > 1.0:
                raise ValueError
            y = y * 5.0
        return y

    assert source.pullback_full(suppressed, 0.5)[1](1.0)[1] == pytest.approx(15 * 0.5**2)
    with pytest.raises(cr.UnsupportedSyntaxError, match="its context manager suppressed it"):
        source.pullback_full(suppressed, 2.0)
    assert cr.gradient(suppressed, 2.0)[0] == pytest.approx(12.0)  # on the tape: y = x ** 3


def test_show_prints_the_try_with_its_bookkeeping():
    text = cr.show(log_or_square, 1.3)
    assert "try:" in text and "except ValueError:" in text
    assert "except ChainRulesError:" in text  # the engine's errors go first
    assert "if ran_" in text  # the reverse pass tests what ran


def test_the_tape_agrees_on_every_path_of_a_loop():
    xs = np.linspace(0.2, 3.8, 13)
    for x in xs:
        got = cr.gradient(reciprocals_in_a_loop, x)[0]
        assert got == pytest.approx(trace.pullback_full(reciprocals_in_a_loop, x)[1](1.0)[1], rel=1e-13)
