"""Random tangents of the right type, dtype and structure for any primal."""

from __future__ import annotations

import numpy as np

from .to_vec import layout


def as_rng(rng: np.random.Generator | int | None) -> np.random.Generator:
    """A NumPy ``Generator`` from a generator, a seed, or ``None`` (fresh entropy)."""
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


def rand_tangent(x, rng: np.random.Generator | int | None = None):
    """A random tangent of ``x`` (standard normal entries) of the type a rule would return for it.

    A float gets a float, a NumPy scalar or array one of its dtype and shape (float32 stays
    float32, complex gets complex entries), a tuple, list, dict, namedtuple, dataclass or
    object with fields gets ``Tangent[type(x)]`` with random fields, and anything that cannot be
    perturbed (integers, booleans, strings, ``None``, functions, or a structure of only those)
    gets ``NoTangent()``.

    >>> import numpy as np
    >>> from chainrules.testing import rand_tangent
    >>> rand_tangent(np.ones(3, np.float32), 0).dtype
    dtype('float32')
    >>> rand_tangent((1.0, 2), 0)
    Tangent[tuple](0.12573022..., NoTangent())
    >>> rand_tangent("label", 0)
    NoTangent()
    """
    lay = layout(x)
    return lay.tangent(as_rng(rng).standard_normal(lay.size), 0)


__all__ = ["as_rng", "rand_tangent"]
