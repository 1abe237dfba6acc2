"""Tape errors raised in code the source engine generated (a source gradient inside a tape
gradient) point at the user's line that code came from, not at the generated code."""

from __future__ import annotations

import re

import numpy as np
import pytest

import chainrules as cr


def writes_into_a_computed_array(y):
    out = y * np.ones(2)
    out[np.array([0, 0])] = y * y  # the line the message must name: the tape refuses a repeated index
    return out[0] * y


def test_a_refused_write_in_a_source_gradient_names_the_users_line():
    line = writes_into_a_computed_array.__code__.co_firstlineno + 2
    with pytest.raises(cr.DroppedDerivativeError, match=re.escape(f"(at {__file__}:{line})")) as info:
        cr.gradient(lambda x: cr.gradient(writes_into_a_computed_array, x)[0], 0.5, engine="tape")
    assert "<chainrules-source" not in str(info.value)
