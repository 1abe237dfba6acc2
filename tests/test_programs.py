"""Whole scientific programs (``programs_corpus.py``, ``programs_corpus_two.py``, ``programs_corpus_three.py``,
``programs_corpus_four.py``, ``programs_corpus_five.py``, ``programs_corpus_six.py``,
``programs_corpus_seven.py``, ``programs_corpus_eight.py``, ``programs_corpus_nine.py``,
``programs_corpus_eleven.py``, ``programs_corpus_twelve.py``, ``programs_corpus_thirteen.py``,
``programs_corpus_fourteen.py``) through
every engine and mode (the sixth's, eighth's and ninth's own checks are in their test files).

For each program: both reverse engines against finite differences (the value, the cotangent of
every argument, valid tangent types, arguments left as they were), forward mode's Jacobian in the
first argument, and, where marked, the Hessian by forward over each reverse engine and a tape
gradient of a source gradient. An engine that does not support a construct by design must
refuse it with the message the program lists (``program_checks.py`` has the checks).
"""

from __future__ import annotations

import program_checks as checks
import pytest
from programs_corpus import PROGRAMS as FIRST
from programs_corpus_eight import PROGRAMS as EIGHTH
from programs_corpus_eleven import PROGRAMS as ELEVENTH
from programs_corpus_five import PROGRAMS as FIFTH
from programs_corpus_four import PROGRAMS as FOURTH
from programs_corpus_fourteen import PROGRAMS as FOURTEENTH
from programs_corpus_nine import PROGRAMS as NINTH
from programs_corpus_seven import PROGRAMS as SEVENTH
from programs_corpus_six import PROGRAMS as SIXTH
from programs_corpus_thirteen import PROGRAMS as THIRTEENTH
from programs_corpus_three import PROGRAMS as THIRD
from programs_corpus_twelve import PROGRAMS as TWELFTH
from programs_corpus_two import PROGRAMS as SECOND

PROGRAMS = (
    FIRST + SECOND + THIRD + FOURTH + FIFTH + SIXTH + SEVENTH + EIGHTH + NINTH + ELEVENTH + TWELFTH + THIRTEENTH
) + FOURTEENTH
BY_NAME = {p.name: p for p in PROGRAMS}
NAMES = checks.parameters(PROGRAMS)


@pytest.mark.parametrize(
    "corpus",
    [FIRST, SECOND, THIRD, FOURTH, FIFTH, SIXTH, SEVENTH, EIGHTH, NINTH, ELEVENTH, TWELFTH, THIRTEENTH, FOURTEENTH],
    ids=[
        "first",
        "second",
        "third",
        "fourth",
        "fifth",
        "sixth",
        "seventh",
        "eighth",
        "ninth",
        "eleventh",
        "twelfth",
        "thirteenth",
        "fourteenth",
    ],
)
def test_each_corpus_is_large_and_varied(corpus):
    assert len(corpus) >= 40
    assert sum(p.hessian for p in corpus) >= 15 and sum(p.nested for p in corpus) >= 10


def test_program_names_are_unique():
    assert len(BY_NAME) == len(PROGRAMS)


@pytest.mark.parametrize("name", NAMES["all"])
def test_first_derivatives_match_finite_differences(name):
    checks.check_first_derivatives(BY_NAME[name])


@pytest.mark.parametrize("name", NAMES["second order"])
def test_second_derivatives_match_finite_differences(name):
    checks.check_second_derivatives(BY_NAME[name])
