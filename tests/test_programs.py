"""Whole scientific programs (``programs_corpus.py``) through every engine and mode.

For each program: both reverse engines against finite differences (the value, the cotangent of
every argument, valid tangent types, arguments left as they were), forward mode's Jacobian in the
first argument, and, where marked, the Hessian by forward over each reverse engine and a tape
gradient of a source-engine gradient. An engine that does not support a construct by design must
refuse it with the message the program lists.
"""

from __future__ import annotations

import copy
import functools

import numpy as np
import pytest
from programs_corpus import PROGRAMS

import chainrules as cr
import chainrules.testing as crt
from chainrules.testing.checks import tangent_problems

BY_NAME = {p.name: p for p in PROGRAMS}
REVERSE = ("source", "tape")


def _numeric(x) -> bool:
    return isinstance(x, (float, np.ndarray, np.floating)) and not isinstance(x, bool)


def _first_argument_function(p):
    f, rest, kwargs = p.f, copy.deepcopy(p.args[1:]), p.kwargs
    return lambda x: f(x, *rest, **kwargs)


@functools.cache
def _expected(name: str):
    """The value, the output cotangent, and the finite-difference cotangent of each argument."""
    p = BY_NAME[name]
    y = p.f(*copy.deepcopy(p.args), **p.kwargs)
    dy = 1.0 if isinstance(y, float) else crt.rand_tangent(y, np.random.default_rng(len(name)))
    cotangents = []
    for i, arg in enumerate(p.args):

        def with_argument(x, i=i):
            args = copy.deepcopy(p.args)
            return p.f(*args[:i], x, *args[i + 1 :], **p.kwargs)

        cotangents.append(crt.fd_vjp(with_argument, dy, arg))
    return y, dy, cotangents


def _same(a, b) -> bool:
    """Whether ``b`` holds exactly the values of ``a`` (a copy of it, not changed in place)."""
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if hasattr(a, "__dict__"):
        return type(a) is type(b) and _same(vars(a), vars(b))
    return type(a) is type(b) and a == b


def _refused(p, engine, run):
    with pytest.raises((TypeError, cr.ChainRulesError)) as info:
        run()
    assert p.refuses[engine] in str(info.value), str(info.value)
    assert __file__.replace("test_programs.py", "programs_corpus.py") in str(info.value), "the message names the line"


def test_the_corpus_is_large_and_varied():
    assert len(PROGRAMS) >= 40
    assert sum(p.hessian for p in PROGRAMS) >= 15 and sum(p.nested for p in PROGRAMS) >= 10


@pytest.mark.parametrize("engine", REVERSE)
@pytest.mark.parametrize("name", list(BY_NAME))
def test_reverse_engine_matches_finite_differences(name, engine):
    p = BY_NAME[name]
    args = copy.deepcopy(p.args)
    if engine in p.refuses:
        _refused(p, engine, lambda: cr.pullback(p.f, *args, engine=engine, **p.kwargs)[1](1.0))
        return
    y_expected, dy, expected = _expected(name)
    y, back = cr.pullback(p.f, *args, engine=engine, **p.kwargs)
    crt.assert_approx(y, y_expected, rtol=1e-12, atol=1e-14, name="value")
    grads = back(dy)
    for i, (arg, grad, reference) in enumerate(zip(p.args, grads, expected)):
        problems = tangent_problems(arg, grad, f"d(argument {i})")
        assert not problems, "\n".join(problems)
        crt.assert_approx(grad, reference, rtol=p.rtol, atol=p.rtol * 1e-2, name=f"d(argument {i})")
    assert all(_same(before, after) for before, after in zip(p.args, args)), "an argument was changed"


@pytest.mark.parametrize("name", [p.name for p in PROGRAMS if _numeric(p.args[0])])
def test_forward_jacobian_matches_finite_differences(name):
    p = BY_NAME[name]
    f = _first_argument_function(p)
    x = copy.deepcopy(p.args[0])
    if "forward" in p.refuses:
        _refused(p, "forward", lambda: cr.jacobian(f, x, mode="forward"))
        return
    J = cr.jacobian(f, x, mode="forward")
    expected = crt.fd_jacobian(f, p.args[0]).reshape(np.shape(J))
    np.testing.assert_allclose(J, expected, rtol=p.rtol * 10, atol=p.rtol * 1e-1)


@pytest.mark.parametrize("engine", REVERSE)
@pytest.mark.parametrize("name", [p.name for p in PROGRAMS if p.hessian])
def test_hessian_matches_finite_differences_of_the_gradient(name, engine):
    p = BY_NAME[name]
    f = _first_argument_function(p)
    x = p.args[0]
    refusal = f"hessian-{engine}" if f"hessian-{engine}" in p.refuses else engine
    if refusal in p.refuses:
        _refused(p, refusal, lambda: cr.hessian(f, x, engine=engine))
        return
    H = cr.hessian(f, x, engine=engine)
    assert np.shape(H) == np.shape(x) * 2 and not np.iscomplexobj(H)
    expected = crt.fd_jacobian(lambda z: cr.gradient(f, z)[0], x).reshape(np.shape(H))
    np.testing.assert_allclose(H, expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", [p.name for p in PROGRAMS if p.nested])
def test_tape_gradient_of_a_source_gradient(name):
    p = BY_NAME[name]
    f = _first_argument_function(p)
    x = p.args[0]
    weights = np.linspace(0.5, 1.5, np.size(x)).reshape(np.shape(x)) if np.ndim(x) else 0.7

    def weighted_slope(z):
        return np.sum(cr.gradient(f, z)[0] * weights)

    got = cr.gradient(weighted_slope, x, engine="tape")[0]
    expected = crt.fd_jacobian(weighted_slope, x).reshape(np.shape(x))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)
