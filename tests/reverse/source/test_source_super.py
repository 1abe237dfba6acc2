"""``super()`` and ``super(Class, self)`` in methods: the source engine follows the parent's method
bound to the object and gives its cotangent to the object. The zero-argument form had been refused
(with advice to write the two-argument one), and the two-argument one then failed as a class
without a rule."""

import dataclasses

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt


@dataclasses.dataclass
class Layer:
    w: np.ndarray

    def __call__(self, x):
        return np.tanh(self.w * x)

    def penalty(self):
        return np.sum(self.w**2)


@dataclasses.dataclass
class ScaledLayer(Layer):
    scale: float = 2.0

    def __call__(self, x):
        return self.scale * super().__call__(x)

    def penalty(self):
        return super(ScaledLayer, self).penalty() + 0.1 * self.scale**2  # noqa: UP008 (the explicit form)


@dataclasses.dataclass
class DeeperLayer(ScaledLayer):
    def penalty(self):
        return 3.0 * super().penalty()


def loss(w, scale):
    layers = [ScaledLayer(w, scale), DeeperLayer(w[::-1], scale * 0.5)]
    return sum(np.sum(layer(0.7) ** 2) + layer.penalty() for layer in layers)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_parent_methods_through_super(engine):
    w, scale = np.array([0.3, -0.8, 0.5]), 1.5
    dw, dscale = cr.gradient(loss, w, scale, engine=engine)
    crt.assert_approx(dw, crt.fd_jacobian(lambda v: loss(v, scale), w)[0], rtol=1e-7, atol=1e-9)
    crt.assert_approx(dscale, crt.fd_jacobian(lambda s: loss(w, s), scale).item(), rtol=1e-7, atol=1e-9)
    H = cr.hessian(lambda v: loss(v, scale), w, engine=engine)
    crt.assert_approx(H, crt.fd_jacobian(lambda v: cr.gradient(loss, v, scale)[0], w), rtol=1e-6, atol=1e-8)


def test_a_method_given_as_the_function():
    layer = ScaledLayer(np.array([0.3, -0.8]), 1.5)
    (dlayer,) = cr.gradient(lambda m: m.penalty(), layer)
    assert dlayer.scale == pytest.approx(0.3) and np.allclose(dlayer.w, 2 * layer.w)
