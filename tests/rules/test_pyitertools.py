"""Rules for the rearranging functions of ``itertools`` (product, chain, pairwise, combinations,
permutations, islice, zip_longest, repeat) and ``starmap``: the rules directly, and programs using
them through the source engine (which needs them; the tape and forward mode see the elements)
against finite differences, including reverse-mode Jacobians, and ``enumerate(xs, start=)``."""

import itertools

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt
from chainrules.rules.pyfunctional import Iterated

NO, ZERO = cr.NoTangent(), cr.ZeroTangent()


def test_a_rearrangement_sends_cotangents_back_to_their_elements():
    y, back = cr.rrule(itertools.product, [1.0, 2.0], [3.0])
    assert isinstance(y, Iterated) and list(y) == [(1.0, 3.0), (2.0, 3.0)]
    assert back([(1.0, 1.0), (0.5, 2.0)]) == (NO, cr.Tangent[list](1.0, 0.5), cr.Tangent[list](3.0))
    y, back = cr.rrule(itertools.combinations, (1.0, 2.0, 3.0), 2)
    assert list(y) == [(1.0, 2.0), (1.0, 3.0), (2.0, 3.0)]
    assert back([(1.0, ZERO), ZERO, (ZERO, 4.0)]) == (NO, cr.Tangent[tuple](1.0, ZERO, 4.0), NO)
    y, back = cr.rrule(itertools.zip_longest, [1.0, 2.0], [3.0], fillvalue=0.0)
    assert list(y) == [(1.0, 3.0), (2.0, 0.0)]
    assert back([(1.0, 2.0), (3.0, 4.0)]) == (NO, cr.Tangent[list](1.0, 3.0), cr.Tangent[list](2.0))
    assert back(ZERO) == (NO, ZERO, ZERO)


def test_repeat_needs_a_count():
    y, back = cr.rrule(itertools.repeat, 2.0, 3)
    assert list(y) == [2.0, 2.0, 2.0] and back([1.0, ZERO, 0.5]) == (NO, 1.5, NO)
    with pytest.raises(cr.NoRuleError, match=r"without end; give the count, repeat\(x, n\)"):
        cr.rrule(itertools.repeat, 2.0)


PROGRAMS = {
    "product": lambda x: sum(a * b for a, b in itertools.product(x, x[:2])),
    "product_repeat": lambda x: sum(a * b**2 for a, b in itertools.product(x, repeat=2)),
    "chain": lambda x: sum(v * v for v in itertools.chain(x, x[:2], [x[0] * 3.0])),
    "chain_from_iterable": lambda x: sum(v**3 for v in itertools.chain.from_iterable([x, x[1:]])),
    "pairwise": lambda x: sum(a * b for a, b in itertools.pairwise(x)),
    "combinations": lambda x: sum(a * b for a, b in itertools.combinations(x, 2)),
    "with_replacement": lambda x: sum(a / (1 + b * b) for a, b in itertools.combinations_with_replacement(x, 2)),
    "permutations": lambda x: sum(a * b**2 for a, b in itertools.permutations(x, 2)),
    "islice": lambda x: sum(v * v for v in itertools.islice(x, 1, None, 2)),
    "zip_longest": lambda x: sum(a * b for a, b in itertools.zip_longest(x, x[:2], fillvalue=0.5)),
    "repeat": lambda x: sum(a * b for a, b in zip(x, itertools.repeat(x[0], 3))),
    "starmap": lambda x: sum(itertools.starmap(lambda a, b: a * np.sin(b), zip(x, x[::-1]))),
    "starmap_rows": lambda x: sum(itertools.starmap(lambda a, b: a * b, np.stack([x, x**2]).T)),
    "enumerate_start": lambda x: sum(i * v for i, v in enumerate(x, start=2)),
}


@pytest.mark.parametrize("engine", ["source", "tape"])
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_programs_match_finite_differences(name, engine):
    f = PROGRAMS[name]
    x = np.array([0.3, -1.2, 0.8])
    grad = cr.gradient(f, x, engine=engine)[0]
    crt.assert_approx(grad, crt.fd_jacobian(f, x)[0], rtol=1e-7, atol=1e-9)


def test_a_reverse_jacobian_pulls_a_batch_back_through_them():
    def pairs(x):
        products = [a * b for a, b in itertools.product(x, x[:2])]
        return np.stack(products + [a - b for a, b in itertools.pairwise(itertools.chain(x, [2.0]))])

    x = np.array([0.3, -1.2, 0.8])
    J = cr.jacobian(pairs, x, mode="reverse")
    crt.assert_approx(J, crt.fd_jacobian(pairs, x), rtol=1e-7, atol=1e-9)
    crt.assert_approx(cr.jacobian(pairs, x, mode="forward"), J, rtol=1e-12, atol=1e-12)
