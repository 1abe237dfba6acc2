"""The tape engine's plan for the zoo.

The tape runs any Python, so it runs every case except those that turn a tracked value into a
plain float (the ``math`` module: refused with a ``TypeError`` that says to use NumPy).
Cases whose operations need a rule that is not registered yet wait for it: each lists, as
probes, the rules its operations reach on the tape (``x.sum()`` reaches ``np.ndarray.sum``,
``x[i]`` reaches ``operator.getitem`` on an ndarray, ``x.T`` reaches ``getattr``, a NumPy
scalar times a tracked float reaches ``np.multiply``, and so does a plain array @ a tracked one reach
``np.matmul``).
"""

from __future__ import annotations

import operator

import numpy as np
from zoo_plans import EnginePlan, Probe, Refusal

_A = np.ones(3)
_M = np.ones((2, 2))
_F = np.float64(1.0)


def _ufunc(f, *args):
    return Probe(f, args or (_A,))


SUM = Probe(np.sum, (_A,))
NDSUM = Probe(np.ndarray.sum, (_A,))
NDMEAN = Probe(np.ndarray.mean, (_A,))
MAX = Probe(np.max, (_A,))
ITEM = Probe(operator.getitem, (_A, 0))
SLICE = Probe(operator.getitem, (_A, slice(1, 2)))
NEWAXIS = Probe(operator.getitem, (_A, (None, slice(None))))
MATMUL = Probe(operator.matmul, (_M, _M))
MATVEC = Probe(operator.matmul, (_M, np.ones(2)))
VECVEC = Probe(operator.matmul, (_A, _A))
NP_MATVEC = Probe(np.matmul, (_M, np.ones(2)))  # a plain array @ a tracked one goes through the ufunc
TRANSPOSE = Probe(getattr, (_M, "T"))
ABS = Probe(abs, (1.0,))
SIN_F = _ufunc(np.sin, 1.0)
SIN_64 = _ufunc(np.sin, _F)
EXP_F = _ufunc(np.exp, 1.0)
STACK = Probe(np.stack, ([_A, _A],))

PLAN = EnginePlan(
    engine="tape",
    refused_tags={
        "math": Refusal(
            TypeError,
            "use the NumPy function instead",
            "math.sin(x) converts x with float(), which would drop the derivative",
        ),
        "array_write": Refusal(
            TypeError,
            "would drop its derivative",
            "a tracked value stored into a plain NumPy array (out[i] = v, np.array(values)) would be converted",
        ),
    },
    needs={
        # scalars
        "sin_of_cos": (SIN_F, _ufunc(np.cos, 1.0)),
        "seed_foo": (SIN_F,),
        "softplus": (EXP_F, _ufunc(np.log, 1.0)),
        "logistic": (EXP_F,),
        "abs_of_difference": (ABS,),
        "abs2_of_complex": (Probe(np.conjugate, (1j,)), Probe(np.real, (1j,))),
        "sine_chain": (SIN_F,),
        "branch_on_comparison_of_two": (EXP_F, SIN_F),
        # arrays
        "sum_of_squares": (SUM,),
        "method_sum_of_sines": (_ufunc(np.sin), NDSUM),
        "elementwise_output": (_ufunc(np.exp),),
        "mean_over_axis": (NDMEAN, NDSUM, MAX),
        "product_and_cumsum": (Probe(np.prod, (_A,)), Probe(np.cumsum, (_A,)), ITEM),
        "logsumexp_by_hand": (MAX, _ufunc(np.exp), SUM, _ufunc(np.log, _F)),
        "euclidean_norm": (SUM, _ufunc(np.sqrt, _F), Probe(np.linalg.norm, (_A,))),
        "leaky_relu_with_where": (Probe(np.where, (_A > 0, _A, _A)), NDSUM),
        "relu_with_maximum": (_ufunc(np.maximum, _A, 0.0), VECVEC),
        "broadcast_rows": (NEWAXIS, NDSUM, NDMEAN),
        "mysum": (ITEM,),
        "slices_and_scalars": (ITEM, SLICE, NDSUM),
        "reshape_and_transpose": (
            Probe(np.ndarray.reshape, (_M, 4)),
            TRANSPOSE,
            NDSUM,
            Probe(np.transpose, (_M,)),
            ITEM,
        ),
        "iterate_rows": (ITEM, Probe(np.dot, (_A, _A))),
        "concatenate_and_stack": (Probe(np.concatenate, ([_A, _A],)), STACK, MATVEC, NDSUM),
        "seed003_affine_squared": (NP_MATVEC,),
        "gram_trace": (TRANSPOSE, MATMUL, Probe(np.trace, (_M,)), Probe(np.dot, (_A, _A)), ITEM),
        "two_layer_perceptron": (MATVEC, _ufunc(np.tanh), SUM),
        "linear_solve": (
            Probe(np.linalg.solve, (np.eye(2), np.ones(2))),  # a matrix the rule can factorize
            NDSUM,
            Probe(np.linalg.det, (_M,)),
            _ufunc(np.log, _F),
        ),
        "inverse_trace": (Probe(np.linalg.inv, (np.eye(2),)), Probe(np.trace, (_M,))),
        "einsum_contraction": (Probe(np.einsum, ("ij,j->i", _M, np.ones(2))), NDSUM),
        "float32_input": (Probe(np.ndarray.sum, (_A.astype(np.float32),)),),
        "int_array_weights": (NDSUM,),
        "shrink_until_unit_norm": (SUM, NDSUM, ITEM),
        "branch_per_element": (ITEM, SIN_64),
        # structures
        "dataclass_argument": (SUM,),
        "nested_structure": (SUM,),
        "dict_output": (SIN_F,),
        # closures and methods
        "polynomial_model": (ITEM, STACK),
        "polynomial_loss": (ITEM, STACK, SUM),
        "polynomial_at_scalar": (_ufunc(np.multiply, _F, 1.0),),
        "closure_over_array": (NP_MATVEC, _ufunc(np.tanh), SUM),
        "nested_definitions_in_loop": (SIN_F,),
        "method_of_object": (MATVEC, _ufunc(np.tanh), SUM),
        "sorted_by_key": (ABS,),
        # recursion
        "divide_and_conquer_sum": (ITEM, SLICE, SIN_64),
        "mutual_recursion": (SIN_F,),
        "newton_sqrt": (ABS,),
    },
)
