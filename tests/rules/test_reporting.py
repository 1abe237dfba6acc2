"""Logging inside a function being differentiated: the calls have no derivative, every engine runs
them, and the records show the values."""

from __future__ import annotations

import io
import logging

import numpy as np
import pytest

import chainrules as cr

X = np.array([1.5, 2.0])


@pytest.fixture
def records():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("chainrules.tests.reporting")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield logger, stream
    finally:
        logger.removeHandler(handler)


def test_every_engine_runs_logging_calls(records):
    logger, stream = records
    adapter = logging.LoggerAdapter(logger, {})

    def loss(x):
        value = np.sum(x**3)
        logger.info("loss %.2f", value)
        adapter.warning("first %.1f", x[0])
        logger.log(logging.INFO, "done")
        return value

    expected = 3 * X**2
    np.testing.assert_allclose(cr.gradient(loss, X)[0], expected)
    np.testing.assert_allclose(cr.gradient(loss, X, engine="tape")[0], expected)
    np.testing.assert_allclose(cr.jacobian(loss, X, mode="forward"), expected)
    np.testing.assert_allclose(cr.hessian(loss, X), np.diag(6 * X))
    assert stream.getvalue().splitlines()[:3] == ["loss 11.38", "first 1.5", "done"]


def test_the_module_level_functions_have_no_derivative():
    y, back = cr.rrule(logging.info, "loss %.2f", 1.5)
    assert y is None and back(None) == (cr.NoTangent(), cr.NoTangent(), cr.NoTangent())
