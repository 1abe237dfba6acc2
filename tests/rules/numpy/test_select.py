"""``np.select`` (rules/numpy/select.py) with its default left out or given by keyword: the pullback
returns one cotangent per positional argument (it had always returned one for the default, which
the engines could not unpack); and ``np.choose``, whose cotangent goes back to the chosen choice
(every mode, choices broadcast against the index array, as a list or an array)."""

import numpy as np
import pytest
from _array_checks import Const, check_batched_frule, rand

import chainrules as cr
import chainrules.testing as crt

X = np.array([0.5, 1.0, 1.5])
CONDS = [np.array([True, False, False]), np.array([False, True, False])]


@pytest.mark.parametrize("kwargs", [{}, {"default": 2.0}], ids=["no default", "keyword default"])
def test_rules_without_a_positional_default(kwargs):
    crt.test_rrule(np.select, crt.nondiff(CONDS), [X, X**2], fkwargs=kwargs)
    crt.test_frule(np.select, crt.nondiff(CONDS), [X, X**2], fkwargs=kwargs)
    _, pullback = cr.rrule(np.select, CONDS, [X, X**2], **kwargs)
    assert len(pullback(np.ones(3))) == 3  # f, condlist, choicelist


def test_rules_with_a_positional_default():
    crt.test_rrule(np.select, crt.nondiff(CONDS), [X, X**2], 0.5 * X)
    _, pullback = cr.rrule(np.select, CONDS, [X, X**2], 0.5 * X)
    assert len(pullback(np.ones(3))) == 4


# written out, not called with ``**kwargs``: the source engine passes a call's keywords as written
PROGRAMS = {
    "no default": lambda v: np.select(CONDS, [v * v, np.sin(v)]),
    "keyword default": lambda v: np.select(CONDS, [v * v, np.sin(v)], default=2.0),
    "positional default": lambda v: np.select(CONDS, [v * v, np.sin(v)], np.cos(v)),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
@pytest.mark.parametrize("engine", ["source", "tape"])
def test_gradient(name, engine):
    def f(v):
        return np.sum(PROGRAMS[name](v) ** 2)

    want = crt.fd_jacobian(f, X)[0]
    crt.assert_approx(cr.gradient(f, X, engine=engine)[0], want, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_forward_jacobian(name):
    g = PROGRAMS[name]
    crt.assert_approx(cr.jacobian(g, X, mode="forward"), crt.fd_jacobian(g, X), rtol=1e-7, atol=1e-9)


# ----- choose ---------------------------------------------------------------------------------

INDEX = np.array([[0, 2, 1, 1], [2, 0, 0, 1], [1, 1, 2, 0]])
CHOICES = [
    ((INDEX, [rand(3, 4), rand(3, 4), rand(3, 4)]), {}),
    ((INDEX, [rand(4), rand(3, 1), 2.5]), {}),  # choices broadcast against the index (a number too)
    ((INDEX, rand(3, 3, 4)), {}),  # an array of choices along its first axis
    ((INDEX + 2, rand(3, 3, 4, dtype=np.complex128)), {"mode": "wrap"}),
    ((INDEX * 3 - 2, [rand(3, 4, dtype=np.float32) for _ in range(3)], None, "clip"), {}),  # out=None, mode
    ((np.array([0, 1]), (rand(2), rand(2))), {}),
    ((1, [rand(3), rand(3)]), {}),  # one index for every entry
]


@pytest.mark.parametrize("args, kwargs", CHOICES, ids=range(len(CHOICES)))
def test_choose(args, kwargs, batched_pullback):
    index, choices, *settings = args
    single = np.result_type(*(np.asarray(c) for c in choices)) == np.float32
    tol = {"rtol": 1e-3, "atol": 1e-3} if single else {}
    fixed = [crt.nondiff(v) for v in settings]
    crt.test_rrule(np.choose, crt.nondiff(index), choices, *fixed, fkwargs=kwargs, **tol)
    crt.test_frule(np.choose, crt.nondiff(index), choices, *fixed, fkwargs=kwargs, **tol)
    batched_pullback(np.choose, *args, kwargs=kwargs, rtol=1e-6)
    check_batched_frule(np.choose, Const(index), choices, *(Const(v) for v in settings), fkwargs=kwargs)


def test_choose_sends_the_cotangent_to_the_chosen_choice():
    a, b = np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0, 30.0])
    y, back = cr.rrule(np.choose, np.array([1, 0, 1]), [a, b])
    np.testing.assert_array_equal(y, [10.0, 2.0, 30.0])
    _, d_index, d_choices = back(np.array([1.0, 2.0, 3.0]))
    assert d_index == cr.NoTangent()
    np.testing.assert_array_equal(d_choices[0], [0.0, 2.0, 0.0])
    np.testing.assert_array_equal(d_choices[1], [1.0, 0.0, 3.0])
    with pytest.raises(TypeError, match="out="):
        cr.rrule(np.choose, np.array([1, 0, 1]), [a, b], np.zeros(3))


CHOOSE_PROGRAMS = {
    "list": lambda v: np.choose(np.array([0, 1, 2, 1]), [v * v, np.sin(v), 3.0 * v]),
    "array, clip": lambda v: np.choose(
        np.array([[0, 1, 5, 1], [3, -1, 0, 1]]), np.stack([v, v**2, np.cos(v)]), mode="clip"
    ),
    "broadcast": lambda v: np.choose(np.array([[0], [1]]), [v, v[:1] * 2.0]),
}


@pytest.mark.parametrize("name", list(CHOOSE_PROGRAMS))
@pytest.mark.parametrize("engine", ["source", "tape"])
def test_choose_gradient(name, engine):
    def f(v):
        return np.sum(CHOOSE_PROGRAMS[name](v) ** 2)

    v = np.array([0.5, -1.0, 1.5, 2.0])
    gradient = cr.gradient(f, v, engine=engine)[0]
    crt.assert_approx(gradient, crt.fd_jacobian(f, v)[0], rtol=1e-7, atol=1e-9)
    crt.assert_approx(cr.jacobian(f, v, mode="forward"), gradient, rtol=1e-12, atol=1e-12)


def test_choose_through_every_engine_to_second_order():
    crt.check_grads(
        lambda v: np.sum(CHOOSE_PROGRAMS["array, clip"](v) ** 3), (np.array([0.5, -1.0, 1.5, 2.0]),), order=2
    )


def test_the_method_choose_on_an_index_array():
    index = np.array([1, 0, 2, 1])

    def f(v):  # the index array's method: the choices are what is differentiated
        return np.sum(index.choose([v, 2.0 * v, v**2]) ** 2)

    v = np.array([0.5, -1.0, 1.5, 2.0])
    expected = 2 * index.choose([v, 2.0 * v, v**2]) * index.choose([np.ones(4), 2.0 * np.ones(4), 2 * v])
    crt.assert_approx(cr.gradient(f, v)[0], expected, rtol=1e-12, atol=1e-12)
    crt.assert_approx(cr.jacobian(f, v, mode="forward"), expected, rtol=1e-12, atol=1e-12)
    crt.test_rrule(np.ndarray.choose, crt.nondiff(np.array([1, 0, 0, 1])), [v, 2.0 * v])
