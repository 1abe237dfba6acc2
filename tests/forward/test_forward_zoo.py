"""Forward mode on every case of the shared zoo: finite differences agree, and where dual numbers
cannot pass through the code as Python runs it, the engine refuses clearly and the API runs the
code through the source engine's primal."""

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt
from chainrules import forward
from chainrules.testing.zoo import cases

# Python's math module converts its argument with float(), which a dual refuses (it would drop
# the derivative); the message says how to fix the call. A dual stored into a plain NumPy array
# (out = np.zeros(n); out[i] = v, or np.array(values)) would be converted the same way: NumPy
# reports a dual stored into one element as a ValueError whose cause is the dual's TypeError.
# The engine refuses these cases; cr.jvp runs them through the source engine's primal.
REFUSED_TAGS = {
    "math": ((TypeError,), "use the NumPy function instead"),
    "array_write": ((TypeError, ValueError), "would drop its derivative"),
}

# Cases that need a rule written elsewhere: until it is registered, forward mode must raise a
# NoRuleError naming it; once it is, the case is checked like every other.
_V, _M = np.ones(3), np.eye(3) * 2.0
PENDING = {
    "euclidean_norm": ((np.linalg.norm, (_V,)),),
    "linear_solve": ((np.linalg.solve, (_M, _V)), (np.linalg.det, (_M,))),
    "inverse_trace": ((np.linalg.inv, (_M,)),),
}

ALL = cases()


def _refusal(case):
    for tag in sorted(case.tags):
        if tag in REFUSED_TAGS:
            return REFUSED_TAGS[tag]
    return None


@pytest.mark.parametrize("case", ALL, ids=[c.name for c in ALL])
def test_zoo_case_forward(case):
    rng = np.random.default_rng(len(case.name))
    tangents = tuple(crt.rand_tangent(a, rng) for a in case.args)
    refusal = _refusal(case)
    if refusal is not None:
        errors, message = refusal
        with pytest.raises(errors) as info:
            forward.jvp(lambda *a: case.f(*a, **case.kwargs), case.args, tangents)
        chain = [info.value, info.value.__context__]
        assert any(isinstance(e, TypeError) and message in str(e) for e in chain), repr(chain)
    missing = [f for f, args in PENDING.get(case.name, ()) if cr.frule.lookup(f, args) is None]
    if missing:
        with pytest.raises(cr.NoRuleError) as info:
            cr.jvp(lambda *a: case.f(*a, **case.kwargs), case.args, tangents)
        assert any(cr.core.callable_name(f) in str(info.value) for f in missing), str(info.value)
        return
    y, dy = cr.jvp(lambda *a: case.f(*a, **case.kwargs), case.args, tangents)
    expected = case.f(*case.args, **case.kwargs)
    # (run through the source engine's primal, a Python float may come out as np.float64, a float too)
    assert type(y) is type(expected) or (refusal is not None and isinstance(y, type(expected)))
    np.testing.assert_allclose(crt.to_vec(y)[0], crt.to_vec(expected)[0], rtol=1e-12)
    reference = crt.fd_jvp(lambda a: case.f(*a, **case.kwargs), case.args, tangents, perturb_ints="int" in case.tags)
    crt.assert_approx(dy, reference, rtol=case.rtol, atol=case.atol, name="tangent")


def test_the_zoo_is_large_enough():
    assert len(ALL) >= 30


# the cases forward mode runs (no rule pending): the first-order test checks the others' errors
RUNNABLE = [c for c in ALL if all(cr.frule.lookup(f, a) is not None for f, a in PENDING.get(c.name, ()))]


def test_the_api_runs_every_case_the_engine_refuses():
    refused = [c.name for c in ALL if _refusal(c) is not None]
    assert len(refused) >= 5 and set(refused) <= {c.name for c in RUNNABLE}


@pytest.mark.parametrize("case", RUNNABLE, ids=[c.name for c in RUNNABLE])
def test_zoo_case_second_order_forward_over_forward(case):
    """The jvp of the jvp (nested duals, two tags) agrees with finite differences of the jvp."""
    rng = np.random.default_rng(len(case.name) + 1)
    t1 = tuple(crt.rand_tangent(a, rng) for a in case.args)
    t2 = tuple(crt.rand_tangent(a, rng) for a in case.args)

    def jvp_along_t1(*a):
        return cr.jvp(lambda *b: case.f(*b, **case.kwargs), a, t1)[1]

    _, second = cr.jvp(jvp_along_t1, case.args, t2)
    reference = crt.fd_jvp(lambda a: jvp_along_t1(*a), case.args, t2, perturb_ints="int" in case.tags)
    crt.assert_approx(second, reference, rtol=max(case.rtol, 1e-5), atol=max(case.atol, 1e-7), name="second order")
