"""The array methods of NumPy scalars, through the rules of their np.ndarray counterparts."""

import numpy as np
import pytest

import chainrules as cr
from chainrules.rules.numpy.scalar_methods import _NAMES
from chainrules.testing import nondiff, test_frule, test_rrule

S = np.float64(0.7)
CASES = [
    ("sum", S, ()),
    ("mean", S, ()),
    ("prod", np.float64(-1.3), ()),
    ("max", S, ()),
    ("min", S, ()),
    ("cumsum", S, ()),
    ("cumprod", S, ()),
    ("reshape", S, (nondiff(1),)),
    ("reshape", S, (nondiff((1, 1)),)),
    ("ravel", S, ()),
    ("flatten", S, ()),
    ("squeeze", S, ()),
    ("transpose", S, ()),
    ("copy", S, ()),
    ("repeat", S, (nondiff(3),)),
    ("clip", S, (0.0, 0.5)),  # the bounds are differentiable too
    ("clip", S, (0.0, 1.0)),
    ("round", np.float64(0.123456), (nondiff(3),)),
    ("astype", S, (nondiff(np.float64),)),
    ("var", S, ()),
    ("sum", np.complex128(0.3 - 1.2j), ()),
    ("mean", np.float32(0.25), ()),
    ("item", S, ()),
    ("tolist", S, ()),  # a Python float, as item()
    ("tolist", np.complex128(0.3 - 1.2j), ()),
]


@pytest.mark.parametrize("name, x, args", CASES, ids=[f"{n}-{type(x).__name__}-{len(a)}" for n, x, a in CASES])
def test_scalar_methods_agree_with_finite_differences(name, x, args):
    f = getattr(np.generic, name)
    test_rrule(f, x, *args)
    test_frule(f, x, *args)


def test_every_listed_method_has_the_rules_of_its_array_counterpart():
    for name in _NAMES:
        array_method = getattr(np.ndarray, name)
        assert cr.rrule.lookup(array_method, (np.zeros(()),)) is not None, name
        assert cr.frule.lookup(array_method, (np.zeros(()),)) is not None, name
        assert cr.rrule.lookup(getattr(np.generic, name), (S,)) is not None, name


def test_the_primal_is_the_scalar_methods_own_result():
    assert type(cr.rrule(np.generic.sum, S)[0]) is np.float64
    assert type(cr.rrule(np.generic.astype, S, np.float32)[0]) is np.float32  # a 0-d array's would be an array
    assert cr.rrule(np.generic.reshape, S, 1)[0].shape == (1,)


def f_of_a_full_reduction(x):
    return x.sum().squeeze() * x.max().reshape(1).sum() + x.mean().clip(-1.0, 1.0) * x.prod().astype(np.float64)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_engines_agree_on_methods_of_a_full_reduction(engine):
    x = np.array([0.4, -0.9, 1.3])
    expected = cr.jacobian(f_of_a_full_reduction, x, mode="forward")
    np.testing.assert_allclose(cr.gradient(f_of_a_full_reduction, x, engine=engine)[0], expected, rtol=1e-12)
    np.testing.assert_allclose(expected, cr.testing.fd_vjp(f_of_a_full_reduction, 1.0, x), rtol=1e-6)
    # round has derivative zero (it is piecewise constant), in every engine
    assert cr.gradient(lambda x: x.sum().round(6), x, engine=engine) == (cr.ZeroTangent(),)
    np.testing.assert_array_equal(cr.jacobian(lambda x: x.sum().round(6), x, mode="forward"), np.zeros(3))


@pytest.mark.parametrize(
    "f, x, index",
    [
        (np.generic.take, np.float64(1.5), np.array([0, 0])),  # found by fuzzing: a number taken twice
        (np.ndarray.take, np.array(1.5), np.array([0, -1, 0])),
        (np.take, np.array(1.5 + 1.0j), np.array([[0], [0]])),
    ],
)
def test_a_number_taken_several_times_gets_the_sum_of_the_cotangents(f, x, index, batched_pullback):
    test_rrule(f, x, index)
    test_frule(f, x, index)
    assert cr.unthunk(cr.rrule(f, x, index)[1](np.ones(np.shape(index)))[1]) == index.size
    if f is not np.generic.take:  # (the scalar method's rule takes one cotangent at a time)
        batched_pullback(f, x, index)
