"""The core of chainrules: tangent types, accumulation, projection, the rule registry, errors.

The core imports no engine and no rule module; everything else imports it.
"""

from .accumulation import accumulate, add, iadd, is_inplaceable_destination
from .active import ActiveValue, active_engine, call_by_engine, current_engine, rrule_via_ad
from .basis import BasisSeed, basis_seed
from .errors import (
    ChainRulesError,
    DroppedDerivativeError,
    NoDerivativeError,
    NoRuleError,
    UnsupportedSyntaxError,
    callable_name,
    user_location,
)
from .projection import (
    ProjectTo,
    carries_batch,
    conj,
    input_matcher,
    is_array_of_rows,
    match_input,
    match_input_batch,
    rows_cotangent,
    unbroadcast,
    unbroadcast_batch,
)
from .registry import batch_declines, decline_batch, frule, non_differentiable, opt_out, rrule, scalar_rule
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
    "call_by_engine",
    "AbstractThunk",
    "AbstractZero",
    "BasisSeed",
    "ChainRulesError",
    "DroppedDerivativeError",
    "NoDerivativeError",
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
    "batch_declines",
    "callable_name",
    "carries_batch",
    "conj",
    "current_engine",
    "decline_batch",
    "frule",
    "iadd",
    "is_array_of_rows",
    "is_inplaceable_destination",
    "iszero",
    "match_input",
    "input_matcher",
    "match_input_batch",
    "move",
    "non_differentiable",
    "opt_out",
    "rows_cotangent",
    "rrule",
    "rrule_via_ad",
    "scalar_rule",
    "unbroadcast",
    "unbroadcast_batch",
    "unthunk",
    "user_location",
]
