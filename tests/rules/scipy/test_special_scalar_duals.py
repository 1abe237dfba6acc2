"""Second derivatives of ``expit`` and ``log_expit`` of a scalar: the rule's primal runs on the
dual number of forward over reverse, which is returned as it is (it had been indexed like a 0-d
array and failed)."""

import numpy as np
import pytest
import scipy.special as sc

import chainrules as cr
import chainrules.testing as crt


@pytest.mark.parametrize("f", [sc.expit, sc.log_expit], ids=lambda f: f.__name__)
@pytest.mark.parametrize("engine", ["source", "tape"])
def test_hessian_through_a_scalar_argument(f, engine):
    def loss(x):
        return f(x[0]) * x[1] + f(-x[1])

    x = np.array([0.3, 0.5])
    H = cr.hessian(loss, x, engine=engine)
    crt.assert_approx(H, crt.fd_jacobian(lambda z: cr.gradient(loss, z)[0], x), rtol=1e-6, atol=1e-9)
