"""``.shape``, ``.ndim``, ``.dtype``, ... of a value whose type the analysis does not know (what a
NumPy function returned for a global array) are read as an array's, with no derivative, and
checked when they run. They had been taken for values being differentiated (a call given
``h.shape[1]`` then needed a rule: ``rng.normal(0.0, 0.1, h.shape[1])`` was refused) and for
views of the array (``rng.random(h.shape)`` was refused as a call that may change ``h`` in place).
An object of the user's whose attribute of that name is a number keeps its derivative: made by
its class inside the function, its type is known; otherwise the check refuses it."""

import dataclasses

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt
from chainrules.reverse import source

X = np.array([[0.5, -1.0], [1.5, 0.3], [-0.7, 0.8]])


def dropout_loss(W):
    h = np.tanh(X @ W)
    mask = np.random.default_rng(3).random(h.shape) > 0.3
    noise = np.random.default_rng(4).normal(0.0, 0.1, h.shape[1])
    return np.sum((h * mask + noise) ** 2) + h.ndim * np.sum(np.zeros(h.shape, dtype=h.dtype) + h)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_calls_given_a_computed_arrays_shape_run(engine):
    W = np.array([[0.2, -0.4, 0.1], [0.3, 0.5, -0.2]])
    grad = cr.gradient(dropout_loss, W, engine=engine)[0]
    crt.assert_approx(grad, crt.fd_jacobian(dropout_loss, W).reshape(W.shape), rtol=1e-7, atol=1e-9)
    H = cr.hessian(lambda w: dropout_loss(w.reshape(2, 3)), W.ravel(), engine=engine)
    crt.assert_approx(H, crt.fd_jacobian(lambda w: cr.gradient(dropout_loss, w.reshape(2, 3))[0].ravel(), W.ravel()))


@dataclasses.dataclass
class GammaPrior:
    shape: float
    rate: float

    def log_density(self, x):
        return (self.shape - 1) * np.log(x) - self.rate * x


def prior_made_inside(a):
    prior = GammaPrior(a, 2.0)
    return prior.log_density(1.5) + prior.shape**2


def prior_from_a_factory(a):
    prior = make_prior(a)  # a call the analysis cannot see the type of
    return prior.shape**2


def make_prior(a):
    return GammaPrior(a, 2.0)


def test_a_number_named_shape_of_an_object_of_the_users_keeps_its_derivative():
    grad = cr.gradient(prior_made_inside, 3.0)[0]
    assert abs(grad - (np.log(1.5) + 6.0)) < 1e-12


def test_a_number_named_shape_of_an_object_of_unknown_type_is_refused():
    with pytest.raises(cr.UnsupportedSyntaxError, match=r"`prior\.shape` is a float here, not an array's shape") as e:
        source.pullback_full(prior_from_a_factory, 3.0)
    assert f"{__file__}:" in str(e.value)
