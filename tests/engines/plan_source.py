"""The source engine's plan for the zoo.

The source engine reads each function's code, so it runs ``math`` calls on plain floats (no
refusal, unlike the tape). It refuses, with ``UnsupportedSyntaxError`` and the line, what its
fence does not support yet: loops. Cases waiting for a rule list it as a probe.
"""

from __future__ import annotations

import numpy as np
from zoo_plans import EnginePlan, Probe, Refusal

from chainrules import UnsupportedSyntaxError

_M = np.eye(2) + 1.0

LOOP = Refusal(
    UnsupportedSyntaxError,
    "loops is not supported by the source engine",
    "loops come with the second part of the source engine",
)

PLAN = EnginePlan(
    engine="source",
    refused={
        name: LOOP
        for name in (
            "mysum",
            "iterate_rows",
            "shrink_until_unit_norm",
            "branch_per_element",
            "polynomial_model",
            "polynomial_loss",
            "polynomial_at_scalar",
            "nested_definitions_in_loop",
            "halve_until_small",
            "horner_loop",
            "sine_chain",
            "early_return_in_loop",
        )
    },
    needs={
        "euclidean_norm": (Probe(np.linalg.norm, (np.ones(3),)),),
        "linear_solve": (Probe(np.linalg.solve, (_M, np.ones(2))), Probe(np.linalg.det, (_M,))),
        "inverse_trace": (Probe(np.linalg.inv, (_M,)),),
    },
)
