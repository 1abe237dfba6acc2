"""The core of chainrules: tangent types, accumulation, projection, the rule registry, errors.

The core imports no engine and no rule module; everything else imports it.
"""

from .accumulation import accumulate, add, iadd, is_inplaceable_destination
from .active import ActiveValue, active_engine, current_engine, rrule_via_ad
from .basis import BasisSeed, basis_seed
from .errors import ChainRulesError, NoRuleError, UnsupportedSyntaxError, callable_name, user_location
from .projection import ProjectTo, conj, match_input, unbroadcast
from .registry import frule, non_differentiable, opt_out, rrule, scalar_rule
from .tangents import (
    AbstractTangent,
    AbstractThunk,
    AbstractZero,
    InplaceableThunk,
    NoTangent,
    Tangent,
    Thunk,
    ZeroTangent,
    iszero,
    move,
    unthunk,
)

__all__ = [
    "AbstractTangent",
    "ActiveValue",
    "AbstractThunk",
    "AbstractZero",
    "BasisSeed",
    "ChainRulesError",
    "InplaceableThunk",
    "NoRuleError",
    "NoTangent",
    "ProjectTo",
    "Tangent",
    "Thunk",
    "UnsupportedSyntaxError",
    "ZeroTangent",
    "accumulate",
    "active_engine",
    "add",
    "basis_seed",
    "callable_name",
    "conj",
    "current_engine",
    "frule",
    "iadd",
    "is_inplaceable_destination",
    "iszero",
    "match_input",
    "move",
    "non_differentiable",
    "opt_out",
    "rrule",
    "rrule_via_ad",
    "scalar_rule",
    "unbroadcast",
    "unthunk",
    "user_location",
]
