"""Every engine on every zoo case: finite differences, each other, or a clear refusal.

An engine joins with one line in ``PLANS`` and a ``plan_<engine>.py`` beside this file.
"""

from __future__ import annotations

import re

import numpy as np
import plan_source
import plan_tape
import pytest

import chainrules as cr
import chainrules.testing as crt
from chainrules.testing.checks import tangent_problems
from chainrules.testing.zoo import CASES, cases

PLANS = [plan_tape.PLAN, plan_source.PLAN]

ALL_CASES = cases()
PARAMS = [pytest.param(plan, case, id=f"{plan.engine}-{case.name}") for plan in PLANS for case in ALL_CASES]


def _cotangents_by_finite_differences(case, dy) -> list:
    """One finite-difference cotangent per positional argument of the case."""
    out = []
    for i, arg in enumerate(case.args):

        def with_argument(x, i=i):
            return case.f(*case.args[:i], x, *case.args[i + 1 :], **case.kwargs)

        out.append(crt.fd_vjp(with_argument, dy, arg, perturb_ints="int" in case.tags))
    return out


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
    expected_y = case.f(*case.args, **case.kwargs)
    y, back = plan.pullback(case)
    assert type(y) is type(expected_y)
    np.testing.assert_allclose(crt.to_vec(y)[0], crt.to_vec(expected_y)[0], rtol=1e-12)
    dy = crt.rand_tangent(expected_y, np.random.default_rng(len(case.name)))
    grads = back(dy)
    assert len(grads) == len(case.args)
    for i, (arg, grad) in enumerate(zip(case.args, grads)):
        problems = tangent_problems(arg, grad, f"d(argument {i})")
        assert not problems, "\n".join(problems)
    for i, (grad, reference) in enumerate(zip(grads, _cotangents_by_finite_differences(case, dy))):
        crt.assert_approx(grad, reference, rtol=case.rtol, atol=case.atol, name=f"d(argument {i})")
    # the engines agree with each other
    for other in PLANS:
        if other is not plan and other.status(case) == "run":
            other_grads = other.pullback(case)[1](dy)
            for i, (a, b) in enumerate(zip(grads, other_grads)):
                crt.assert_approx(a, b, rtol=1e-9, atol=1e-12, name=f"{plan.engine} vs {other.engine}: d{i}")


@pytest.mark.parametrize("plan", PLANS, ids=lambda p: p.engine)
def test_plan_names_existing_cases(plan):
    stale = (set(plan.needs) | set(plan.refused)) - set(CASES)
    assert not stale, f"the {plan.engine} plan names cases that are not in the zoo: {sorted(stale)}"


def test_the_zoo_is_large_enough():
    assert len(ALL_CASES) >= 40
    for tag in ("scalar", "array", "structure", "closure", "method", "recursion", "control_flow"):
        assert cases(tag), tag
