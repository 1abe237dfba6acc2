"""chainrules: automatic differentiation of ordinary Python and NumPy code, built on rules.

>>> import chainrules as cr
>>> import math
>>> y, back = cr.rrule(math.sin, 0.5)
>>> round(back(1.0)[1], 6) == round(math.cos(0.5), 6)
True
"""

from . import (
    forward,  # noqa: F401 (it registers forward mode's jvp with the core, for rules that need it)
    rules,
)
from .api import derivative, gradient, hessian, jacobian, jvp, pullback, show, value_and_gradient
from .checkpointing import checkpoint
from .core import (
    AbstractThunk,
    AbstractZero,
    ChainRulesError,
    DroppedDerivativeError,
    EscapedValueError,
    InplaceableThunk,
    NoDerivativeError,
    NonSmoothWarning,
    NoRuleError,
    NoTangent,
    ProjectTo,
    Tangent,
    Thunk,
    UnsupportedSyntaxError,
    ZeroTangent,
    accumulate,
    add,
    frule,
    frule_via_ad,
    iadd,
    iszero,
    match_input,
    move,
    non_differentiable,
    opt_out,
    rrule,
    rrule_via_ad,
    scalar_rule,
    unbroadcast,
    unthunk,
)
from .core.registry import defer_rules

# scipy.optimize.minimize's rules differentiate the gradient (cr.gradient's rule): they live beside the API
defer_rules("scipy.optimize", f"{__name__}.minimizers")

__version__ = "0.1.0"


def __getattr__(name: str):
    # `cr.testing.test_rrule(...)` works after a plain `import chainrules as cr`; the testing
    # utilities are imported on first use, not with the library.
    if name == "testing":
        import importlib

        return importlib.import_module(f"{__name__}.testing")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "checkpoint",
    "derivative",
    "gradient",
    "hessian",
    "jacobian",
    "jvp",
    "pullback",
    "show",
    "value_and_gradient",
    "AbstractThunk",
    "AbstractZero",
    "ChainRulesError",
    "DroppedDerivativeError",
    "EscapedValueError",
    "NoDerivativeError",
    "InplaceableThunk",
    "NonSmoothWarning",
    "NoRuleError",
    "NoTangent",
    "ProjectTo",
    "Tangent",
    "Thunk",
    "UnsupportedSyntaxError",
    "ZeroTangent",
    "accumulate",
    "add",
    "frule",
    "frule_via_ad",
    "iadd",
    "iszero",
    "match_input",
    "move",
    "non_differentiable",
    "opt_out",
    "rrule",
    "rrule_via_ad",
    "rules",
    "scalar_rule",
    "unbroadcast",
    "unthunk",
]
