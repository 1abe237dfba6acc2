"""Forward-mode AD with dual numbers (seed 003), chunked for Jacobians, tagged for nesting.

``jvp(f, primals, tangents)`` pushes one tangent through ``f``; ``jacobian(f, x)`` pushes
chunks of basis tangents. Every operation on a ``Dual`` runs the ``frule`` of the callable from
the shared registry; this package holds no derivatives of its own.

- ``dual``: the ``Dual`` and ``Tag`` types and ``call``, the one operation (look up, push, wrap);
- ``engine``: ``jvp``, ``jacobian``, seeding structured inputs and reading structured outputs,
  the chunk size rule;
- ``chainrules.core.BasisSeed`` (re-exported here) is the seed: a block of unit tangents whose
  products are row selections;
- ``twins``: callables that compute the same thing (``math.sin`` and ``np.sin``), so that a
  reverse rule called on duals (forward over reverse, for Hessians) runs a rule that takes them.

>>> from chainrules import forward
>>> def babysqrt(x, t=None, n=10):
...     t = (1 + x) / 2 if t is None else t
...     return t if n == 0 else babysqrt(x, (t + x / t) / 2, n - 1)
>>> y, dy = forward.jvp(babysqrt, (2.0,), (1.0,))
>>> round(y, 12), round(dy, 12)  # sqrt(2) and 1 / (2 sqrt(2))
(1.414213562373, 0.353553390593)
"""

from ..core import BasisSeed
from ..core.active import register_forward_jvp
from ..core.twins import register_bridges
from .dual import Dual, DualArray, Tag, _innermost, call
from .engine import SEED_BUDGET, chunk_size_for, jacobian, jvp

register_bridges(Dual, _innermost)
register_forward_jvp(jvp)

__all__ = ["SEED_BUDGET", "BasisSeed", "Dual", "DualArray", "Tag", "call", "chunk_size_for", "jacobian", "jvp"]
