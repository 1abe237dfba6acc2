"""Every engine on every zoo case: finite differences, each other, or a clear refusal.

An engine joins with one line in ``PLANS`` and a ``plan_<engine>.py`` beside this file.
"""

from __future__ import annotations

import re

import numpy as np
import plan_tape
import pytest
from zoo_fd import fd_vjp, flatten, rand_tangent, tangent_vector

import chainrules as cr
from chainrules.testing.zoo import CASES, cases

PLANS = [plan_tape.PLAN]

ALL_CASES = cases()
PARAMS = [pytest.param(plan, case, id=f"{plan.engine}-{case.name}") for plan in PLANS for case in ALL_CASES]


def _perturb_ints(case) -> bool:
    return "int" in case.tags


def _vjp(plan, case, dy):
    y, back = plan.pullback(case)
    return y, back(dy)


@pytest.mark.parametrize("plan, case", PARAMS)
def test_zoo_case(plan, case):
    status = plan.status(case)
    if status == "refused":
        refusal = plan.refusal(case)
        with pytest.raises(refusal.error, match=re.escape(refusal.message)):
            plan.pullback(case)[1](1.0)
        return
    if status == "pending":
        missing = plan.missing(case)
        with pytest.raises(cr.NoRuleError) as info:
            plan.pullback(case)[1](1.0)
        named = [cr.core.callable_name(p.f) for p in missing]
        assert any(name in str(info.value) for name in named), (str(info.value), named)
        return
    rng = np.random.default_rng(len(case.name))
    expected_y = case.f(*case.args, **case.kwargs)
    dy = rand_tangent(expected_y, rng)
    y, grads = _vjp(plan, case, dy)
    perturb = _perturb_ints(case)
    assert type(y) is type(expected_y)
    np.testing.assert_allclose(flatten(y)[0], flatten(expected_y)[0], rtol=1e-12)
    assert len(grads) == len(case.args)
    fd = fd_vjp(case.f, dy, case.args, case.kwargs, perturb)
    for arg, grad, reference in zip(case.args, grads, fd):
        ours = tangent_vector(arg, grad, perturb)
        np.testing.assert_allclose(ours, reference, rtol=case.rtol, atol=case.atol)
    # the engines agree with each other
    for other in PLANS:
        if other is not plan and other.status(case) == "run":
            _, other_grads = _vjp(other, case, dy)
            for arg, a, b in zip(case.args, grads, other_grads):
                np.testing.assert_allclose(
                    tangent_vector(arg, a, perturb), tangent_vector(arg, b, perturb), rtol=1e-9, atol=1e-12
                )


@pytest.mark.parametrize("plan", PLANS, ids=lambda p: p.engine)
def test_plan_names_existing_cases(plan):
    cases()  # loads every family
    stale = (set(plan.needs) | set(plan.refused)) - set(CASES)
    assert not stale, f"the {plan.engine} plan names cases that are not in the zoo: {sorted(stale)}"


def test_the_zoo_is_large_enough():
    assert len(ALL_CASES) >= 40
    for tag in ("scalar", "array", "structure", "closure", "method", "recursion", "control_flow"):
        assert cases(tag), tag
