"""Writing a tracked number into a plain NumPy buffer (``out[i] = x``) converts it with float(); the
tape's refusal names the user's line and says what to write instead."""

from __future__ import annotations

import re

import numpy as np
import pytest

import chainrules as cr


def recurrence(x):
    out = np.zeros(len(x) + 1)
    out[0] = 1.0
    for i in range(len(x)):
        out[i + 1] = out[i] * np.cos(x[i]) + x[i] ** 2  # the line named
    return out


def test_a_write_into_a_plain_buffer_is_refused_with_what_to_write_instead():
    line = recurrence.__code__.co_firstlineno + 4
    with pytest.raises(TypeError, match=re.escape(f"(at {__file__}:{line})")) as info:
        cr.jacobian(recurrence, np.array([0.5, 1.0]), mode="reverse", engine="tape")
    assert "out[i] = x" in str(info.value) and "np.stack" in str(info.value)
    np.testing.assert_allclose(cr.jacobian(recurrence, np.array([0.5, 1.0]), mode="reverse")[0], [0.0, 0.0])


def assemble(ea):
    n = len(ea)
    K = np.zeros((n + 1, n + 1))
    for i in range(n):
        K[i : i + 2, i : i + 2] += ea[i] * np.array([[1.0, -1.0], [-1.0, 1.0]])  # the line named
    return np.sum(np.linalg.solve(K[1:, 1:], np.ones(n)))


def assemble_into_a_buffer_like(ea):
    n = len(ea)
    K = np.zeros_like(ea, shape=(n + 1, n + 1))  # the advice: writes the tape records
    for i in range(n):
        K[i : i + 2, i : i + 2] += ea[i] * np.array([[1.0, -1.0], [-1.0, 1.0]])
    return np.sum(np.linalg.solve(K[1:, 1:], np.ones(n)))


def test_an_update_of_a_plain_buffer_names_the_buffer_that_takes_it():
    ea = np.array([2.0, 1.5, 1.8])
    line = assemble.__code__.co_firstlineno + 4
    with pytest.raises(TypeError, match=re.escape(f"(at {__file__}:{line})")) as info:
        cr.gradient(assemble, ea, engine="tape")
    assert "np.zeros_like(v, shape=n)" in str(info.value)
    np.testing.assert_allclose(
        cr.gradient(assemble_into_a_buffer_like, ea, engine="tape")[0], cr.gradient(assemble, ea)[0], rtol=1e-12
    )
