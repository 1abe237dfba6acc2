"""The rules of Python's ``statistics`` module against finite differences, and through the engines."""

import statistics

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt
from chainrules.core.ruled_calls import IgnoredRuleError

XS = [1.0, 2.5, 4.0, 0.7, 3.1]
WEIGHTS = [1.0, 2.0, 0.5, 3.0, 1.5]

CASES = [
    (statistics.mean, ()),
    (statistics.fmean, ()),
    (statistics.fmean, (WEIGHTS,)),
    (statistics.variance, ()),
    (statistics.variance, (2.0,)),  # xbar given: a derivative of its own
    (statistics.stdev, ()),
    (statistics.stdev, (2.0,)),
    (statistics.pvariance, ()),
    (statistics.pvariance, (2.0,)),
    (statistics.pstdev, ()),
    (statistics.pstdev, (1.5,)),
    (statistics.geometric_mean, ()),
    (statistics.harmonic_mean, ()),
    (statistics.harmonic_mean, (WEIGHTS,)),
    (statistics.median, ()),
    (statistics.median_low, ()),
    (statistics.median_high, ()),
    (statistics.median_grouped, ()),
    (statistics.median_grouped, (0.5,)),
]


def _id(case):
    f, options = case
    return f.__name__ + ("-option" if options else "")


def _data(kind):
    return {"list": list(XS), "tuple": tuple(XS), "array": np.array(XS), "even": XS[:4]}[kind]


@pytest.mark.parametrize("kind", ["list", "tuple", "array", "even"])
@pytest.mark.parametrize("f, options", CASES, ids=[_id(c) for c in CASES])
def test_statistics_rules(f, options, kind, batched_pullback):
    """Finite differences for the data and the option; the primal is the library's, a batch of
    cotangents pulls back as the rows one by one."""
    data = _data(kind)
    options = tuple(o[: len(data)] if isinstance(o, list) else o for o in options)
    crt.test_rrule(f, data, *options)
    crt.test_frule(f, data, *options)
    y, _ = cr.rrule(f, data, *options)
    want = f(data, *options)
    assert type(y) is type(want) and y == want
    batched_pullback(f, data, *options)


def test_statistics_of_numpy_float32_and_mixed_integers():
    data = np.array(XS, dtype=np.float32)
    for f in (statistics.mean, statistics.stdev, statistics.median_low):
        y, back = cr.rrule(f, data)
        assert type(y) is type(f(data)) and y == f(data)
        assert cr.unthunk(back(np.float32(1.0))[1]).dtype == np.float32
    _, back = cr.rrule(statistics.variance, [1.0, 2, 4.0])  # an integer counts: no tangent
    assert back(1.0)[1][1] == cr.NoTangent()


def test_statistics_refuse_a_zero_entry_of_the_geometric_and_harmonic_means():
    with pytest.raises(cr.NoDerivativeError, match=r"statistics.harmonic_mean at .*test_pystatistics.py:\d+"):
        cr.rrule(statistics.harmonic_mean, [1.0, 0.0, 2.0])


def test_stdev_of_equal_entries_has_a_zero_derivative():
    _, back = cr.rrule(statistics.pstdev, [2.0, 2.0, 2.0])
    assert back(1.0)[1] == cr.Tangent[list](0.0, 0.0, 0.0)


def _program(x):
    xs = [x[0], x[1] * 2.0, x[2], x[3] ** 2]
    spread = statistics.stdev(xs) + statistics.fmean(xs, [x[0], 1.0, 2.0, 0.5])
    scale = statistics.variance(xs, statistics.mean(xs)) * statistics.geometric_mean(xs)
    middle = statistics.median_low(xs) * statistics.median_grouped(xs, x[1]) + statistics.median_high(xs)
    return spread * scale + statistics.harmonic_mean(xs, [1.0, x[2], 2.0, 1.0]) + middle * statistics.pstdev(xs)


_X = np.array([1.0, 2.0, 3.5, 0.6])


def test_statistics_through_the_source_engine_forward_mode_and_the_hessian():
    # forward mode runs the function as the source engine's primal does, and the rules' frules
    fd = crt.fd_jacobian(_program, _X)[0]
    np.testing.assert_allclose(cr.gradient(_program, _X)[0], fd, rtol=1e-6)
    np.testing.assert_allclose(cr.jacobian(_program, _X, mode="forward"), fd, rtol=1e-6)
    np.testing.assert_allclose(cr.jvp(_program, (_X,), (np.ones(4),))[1], np.sum(fd), rtol=1e-6)
    fd2 = crt.fd_jacobian(lambda v: cr.gradient(_program, v)[0], _X)
    np.testing.assert_allclose(cr.hessian(_program, _X), fd2, rtol=1e-5, atol=1e-6)


def test_statistics_on_the_tape_are_refused_at_the_user_s_line():
    # the tape runs the function's body on its values, which the library converts to fractions
    line = f"test_pystatistics.py:{_program.__code__.co_firstlineno + 2}"
    with pytest.raises(IgnoredRuleError, match=f"statistics.stdev has a rule that the tape engine .* at .*{line}"):
        cr.gradient(_program, _X, engine="tape")
    # the function it is given is differentiated through its rule
    fd = crt.fd_jacobian(statistics.pstdev, _X)[0]
    np.testing.assert_allclose(cr.gradient(statistics.pstdev, _X, engine="tape")[0], fd)


def _medians(x):
    xs = [x[0], x[1] * 2.0, x[2], x[3] ** 2]
    return statistics.median(xs) * statistics.median_low(xs) + statistics.median_high(xs[:3]) ** 2


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_the_medians_on_every_engine(engine):
    # their bodies sort and index, which the tape and forward mode differentiate as they run
    fd = crt.fd_jacobian(_medians, _X)[0]
    np.testing.assert_allclose(cr.gradient(_medians, _X, engine=engine)[0], fd, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(cr.jacobian(_medians, _X, mode="forward"), fd, rtol=1e-6, atol=1e-9)
    fd2 = crt.fd_jacobian(lambda v: cr.gradient(_medians, v)[0], _X)
    np.testing.assert_allclose(cr.hessian(_medians, _X, engine=engine), fd2, rtol=1e-5, atol=1e-6)
