"""Tape errors raised in code the source engine generated (a source gradient inside a tape
gradient) point at the user's line that code came from, not at the generated code."""

from __future__ import annotations

import re

import pytest

import chainrules as cr


def converts_to_float(y):
    s = float(y)  # the line the message must name
    return s * y


def test_a_refused_conversion_in_a_source_gradient_names_the_users_line():
    line = converts_to_float.__code__.co_firstlineno + 1
    with pytest.raises(TypeError, match=re.escape(f"(at {__file__}:{line})")) as info:
        cr.gradient(lambda x: cr.gradient(converts_to_float, x)[0], 0.5, engine="tape")
    assert "<chainrules-source" not in str(info.value)
