"""scipy.special's pullbacks take a batch of cotangents (a leading batch axis): the same as row by
row, for the elementwise functions (one, two and integer-order arguments, broadcasting, complex,
float32), softmax, log_softmax, logsumexp and softplus; and a reverse-mode Jacobian through them
is one sweep on both engines."""

import numpy as np
import pytest
import scipy.special as sc

import chainrules as cr
import chainrules.testing as crt
from chainrules.reverse import source, trace

R = np.random.default_rng(4)
X = R.uniform(0.5, 2.0, (2, 3))
V = R.uniform(0.5, 2.0, 3)
Z = X + 1j * R.uniform(0.2, 0.8, (2, 3))
F32 = X.astype(np.float32)

CASES = [
    (sc.expit, (X,), {}),
    (sc.expit, (F32,), {}),
    (sc.erf, (X,), {}),
    (sc.gammaln, (X,), {}),
    (sc.digamma, (V,), {}),
    (sc.xlogy, (X, V), {}),  # broadcasting
    (sc.betaln, (V, 1.5), {}),
    (sc.jv, (2, X), {}),  # an integer order
    (sc.polygamma, (1, V), {}),
    (sc.gammainc, (3, X), {}),
    (sc.loggamma, (Z,), {}),  # complex
    (sc.softplus, (X,), {}),
    (sc.softmax, (X,), {"axis": 1}),
    (sc.softmax, (X,), {}),
    (sc.log_softmax, (X,), {"axis": 0}),
    (sc.logsumexp, (X,), {"axis": 1}),
    (sc.logsumexp, (X,), {"axis": 0, "keepdims": True}),
    (sc.logsumexp, (X,), {}),
    (sc.logsumexp, (X, 1, V), {}),  # b= given positionally gets a cotangent
]


@pytest.mark.parametrize("f, args, kwargs", CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_pullbacks_take_a_batch(f, args, kwargs, batched_pullback):
    single = any(np.result_type(a) == np.float32 for a in args if isinstance(a, np.ndarray))
    batched_pullback(f, *args, kwargs=kwargs, rtol=2e-6 if single else 1e-12)


def softmax_layer(x):
    return sc.log_softmax(np.outer(x, V), axis=1)[0] + sc.expit(x).sum() * sc.logsumexp(x)


def ufunc_layer(x):
    return sc.expit(x) * sc.erf(x[::-1]) + sc.gammaln(x * x + 1.0)


@pytest.mark.parametrize(
    "engine, f",
    [("source", softmax_layer), ("source", ufunc_layer), ("tape", ufunc_layer)],  # the tape: ufuncs (see engines.md)
)
def test_a_reverse_jacobian_through_special_functions_is_one_sweep(engine, f):
    x = R.standard_normal(3)
    run = source.pullback_full if engine == "source" else trace.pullback_full
    y, back = run(f, x)
    assert back.batched
    J = cr.jacobian(f, x, mode="reverse", engine=engine)
    rows = np.stack([cr.unthunk(back(e)[1]) for e in np.eye(3)])  # one cotangent at a time
    np.testing.assert_allclose(J, rows, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(J, crt.fd_jacobian(f, x).reshape(3, 3), rtol=1e-6, atol=1e-8)
