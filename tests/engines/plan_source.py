"""The source engine's plan for the zoo.

The source engine reads each function's code, so it runs ``math`` calls on plain floats (no
refusal, unlike the tape), loops, comprehensions and writes into containers the function made.
Cases waiting for a rule list it as a probe.
"""

from __future__ import annotations

import numpy as np
from zoo_plans import EnginePlan, Probe

_M = np.eye(2) + 1.0

PLAN = EnginePlan(
    engine="source",
    needs={
        "euclidean_norm": (Probe(np.linalg.norm, (np.ones(3),)),),
        "linear_solve": (Probe(np.linalg.solve, (_M, np.ones(2))), Probe(np.linalg.det, (_M,))),
        "inverse_trace": (Probe(np.linalg.inv, (_M,)),),
    },
)
