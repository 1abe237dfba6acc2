"""Testing utilities: finite differences, rule testers and gradient checks (the ChainRulesTestUtils part).

- ``central_fdm(p, q)`` (and ``forward_fdm``, ``backward_fdm``): finite-difference methods with an
  adaptive step; ``fd_jvp``, ``fd_vjp``, ``fd_jacobian`` apply them to structured functions
  through ``to_vec``.
- ``test_rrule``, ``test_frule``, ``test_scalar``: check a rule against finite differences and the
  rule contract; ``nondiff(x)`` marks an argument that must get ``NoTangent()``;
  ``rand_tangent(x, rng)`` draws a tangent of the right type; ``assert_approx`` compares tangents.
- ``check_grads``: check the engines behind ``cr.pullback``/``cr.jvp`` on a whole function.

>>> import operator
>>> import chainrules.testing as crt
>>> crt.test_rrule(operator.mul, 2.0, 3.0)
>>> crt.test_frule(operator.mul, 2.0, 3.0)
"""

from .check_grads import JVPFunction, PullbackFunction, available_reverse_engines, check_grads
from .checks import assert_approx, default_tolerances
from .finite_differences import (
    FiniteDifferenceMethod,
    backward_fdm,
    central_fdm,
    default_fdm,
    fd_jacobian,
    fd_jvp,
    fd_vjp,
    fdm_coefficients,
    forward_fdm,
)
from .random_tangents import rand_tangent
from .testers import fd_pullback_full, fd_pushforward_full, test_frule, test_rrule, test_scalar
from .to_vec import NonDifferentiable, nondiff, to_vec

__all__ = [
    "FiniteDifferenceMethod",
    "JVPFunction",
    "PullbackFunction",
    "available_reverse_engines",
    "check_grads",
    "NonDifferentiable",
    "assert_approx",
    "backward_fdm",
    "central_fdm",
    "default_fdm",
    "default_tolerances",
    "fd_jacobian",
    "fd_jvp",
    "fd_pullback_full",
    "fd_pushforward_full",
    "fd_vjp",
    "fdm_coefficients",
    "forward_fdm",
    "nondiff",
    "rand_tangent",
    "test_frule",
    "test_rrule",
    "test_scalar",
    "to_vec",
]
