"""Index keys as the engines rewrite them for a batch of tangents or cotangents.

An engine that carries a batch axis on an array (forward mode's chunked partials, the tape's
block of cotangents) moves that axis last to index the array with the user's key; a key holding
``...`` would then stretch over the batch axis too, so the ``...`` is spelled out first.
"""

from __future__ import annotations

import numpy as np


def ellipsis_spelled_out(key, ndim: int):
    """``key`` for an array of ``ndim`` axes with its ``...`` replaced by the whole slices it stands
    for (a boolean mask indexes as many axes as it has); a key without ``...`` as it is.

    >>> ellipsis_spelled_out((Ellipsis, 0), 3)
    (slice(None, None, None), slice(None, None, None), 0)
    >>> ellipsis_spelled_out((np.array([[True, False]]), Ellipsis), 3)[1:]
    (slice(None, None, None),)
    """
    parts = key if type(key) is tuple else (key,)
    where = next((i for i, p in enumerate(parts) if p is Ellipsis), None)
    if where is None:
        return key
    used = 0
    for p in parts:
        if p is None or p is Ellipsis:
            continue
        a = None if isinstance(p, slice) else np.asarray(p)
        used += a.ndim if a is not None and a.dtype == bool else 1
    return parts[:where] + (slice(None),) * (ndim - used) + parts[where + 1 :]
