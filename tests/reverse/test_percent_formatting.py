"""printf-style formatting (``"%.3f" % x``, and the logging module's ``msg % args``) of a value
being differentiated prints it, as an f-string does, in every engine and nesting; converting it
with ``float(x)`` for a computation is still refused."""

from __future__ import annotations

import io
import logging

import numpy as np
import pytest

import chainrules as cr
from chainrules import forward
from chainrules.testing import fd_jacobian

X = np.array([1.5, 2.0])


def reports_progress(x):
    total = np.sum(x**2)
    line = "total %.3f, first %d, second %s, %5.1e" % (total, x[0], x[1], total * x[1])  # noqa: UP031
    remainder = 2.0 % x[0]  # numeric %: the operand's own rule
    return total * np.exp(-x[0]) + remainder * (len(line) > 0)


def test_every_engine_formats_with_percent():
    expected = fd_jacobian(reports_progress, X)[0]
    for engine in ("source", "tape"):
        np.testing.assert_allclose(cr.gradient(reports_progress, X, engine=engine)[0], expected, rtol=1e-7)
    np.testing.assert_allclose(cr.jacobian(reports_progress, X, mode="forward"), expected, rtol=1e-7)
    hessian = fd_jacobian(lambda z: cr.gradient(reports_progress, z)[0], X)
    for engine in ("source", "tape"):
        np.testing.assert_allclose(cr.hessian(reports_progress, X, engine=engine), hessian, rtol=1e-6, atol=1e-8)
    by_tape = cr.gradient(lambda z: np.sum(cr.gradient(reports_progress, z)[0]), X, engine="tape")[0]
    np.testing.assert_allclose(by_tape, hessian.sum(axis=0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("run", ["tape", "forward"])
def test_the_logging_module_formats_a_value_being_differentiated(run):
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("chainrules.tests.percent")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)

    def loss(x):
        value = np.sum(x**3)
        logger.info("loss %.2f at %d", value, x[0])
        return value

    try:
        if run == "tape":
            (grad,) = cr.gradient(loss, X, engine="tape")
        else:
            grad = cr.jacobian(loss, X, mode="forward")
    finally:
        logger.removeHandler(handler)
    np.testing.assert_allclose(grad, 3 * X**2)
    assert stream.getvalue() == "loss 11.38 at 1\n"


@pytest.mark.parametrize("engine", ["tape", "forward"])
def test_float_of_a_value_being_differentiated_is_still_refused(engine):
    with pytest.raises(TypeError, match="would drop its derivative"):
        if engine == "tape":
            cr.gradient(lambda x: float(x) * x, 1.5, engine="tape")
        else:
            forward.jvp(lambda x: float(x) * x, (1.5,), (1.0,))
    if engine == "forward":  # the API runs it as the source engine does: float(x) is x there, as in reverse mode
        assert cr.derivative(lambda x: float(x) * x, 1.5) == cr.gradient(lambda x: float(x) * x, 1.5)[0] == 3.0
