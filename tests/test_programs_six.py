"""The sixth corpus (SciPy solvers, integrators and linear algebra): what its programs show beyond the
shared checks (``test_programs.py`` runs its programs through every engine and mode).

The whitening loss ``V f(w) V^T`` of ``eigh`` is checked against finite differences at a covariance
with distinct eigenvalues; at an identity-initialised covariance (one eigenvalue repeated three
times) the eigenvectors have no derivative and the rules leave their rotation within the eigenspace
out, as documented in ``chainrules.rules.numpy.linalg``: every engine warns there, at the program's
line, instead of returning that gradient silently.
"""

from __future__ import annotations

import inspect

import numpy as np
import programs_corpus_six as c6
import pytest

import chainrules as cr

WHITEN = c6.whitening_loss_at_a_fitted_covariance
IDENTITY_INITIALISED = 1.5 * np.eye(3)

DIFFERENTIATIONS = {
    "source": lambda f, x: cr.gradient(f, x, engine="source"),
    "tape": lambda f, x: cr.gradient(f, x, engine="tape"),
    "forward": lambda f, x: cr.jacobian(f, x, mode="forward"),
}


@pytest.mark.parametrize("how", sorted(DIFFERENTIATIONS))
def test_whitening_at_a_repeated_eigenvalue_warns_at_the_programs_line(how):
    with pytest.warns(cr.NonSmoothWarning, match="eigenvalues") as record:
        DIFFERENTIATIONS[how](WHITEN, IDENTITY_INITIALISED)
    assert any(inspect.getsourcefile(WHITEN) in str(w.message) for w in record)
