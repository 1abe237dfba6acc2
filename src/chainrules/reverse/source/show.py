"""``show(f, *args)``: the code the engine generates for a call, as Python source.

>>> def f(a, b):
...     return a / (a + b * b)
>>> print(show(f, 2.0, 3.0), end="")  # doctest: +ELLIPSIS
# f at ...:1 for (float, float)
def f_primal(a, b):
    if type(a) is not float or type(b) is not float:
        return respecialize(a, b)
    # return a / (a + b * b)
    y_1 = b * b
    y_2 = a + y_1
    y_3 = a / y_2
    def f_pullback(dy_3):
        # grad of: return a / (a + b * b)
        if type(dy_3) is not float:
            dy_3 = project_real(dy_3)
        da = dy_3 / y_2
        dy_2 = -da * y_3
        da = da + dy_2
        dy_1 = dy_2
        db = 2 * dy_1 * b
        return (NO, da, db)
    return y_3, f_pullback
"""

from __future__ import annotations

import types

from ...core.registry import rrule
from . import cache
from .engine import _class_attribute


def show(f, *args, **kwargs) -> str:
    """The primal and pullback code generated for ``f(*args, **kwargs)``."""
    if rrule.lookup(f, args) is not None:
        return f"# {getattr(f, '__qualname__', f)!s} has a rule: its pullback is the rule's, nothing is generated\n"
    bound = False
    fn = f
    if type(f) is types.MethodType:
        fn, args, bound = f.__func__, (f.__self__, *args), True
    elif type(f) is not types.FunctionType:
        fn, args, bound = _class_attribute(type(f), "__call__"), (f, *args), True
    if type(fn) is not types.FunctionType:
        raise TypeError(f"show: {f!r} is not a Python function, method or callable object")
    entry = cache.transformed(fn)
    try:
        entry.signature.bind(*args, **kwargs)
    except TypeError as exc:  # the code is generated for the types of a call's arguments
        raise TypeError(f"show(f, *args) needs the arguments of a call of {fn.__qualname__}: {exc}") from None
    spec = entry.specialization(fn, args, kwargs, bound, cache.call_key(fn, args, kwargs, bound))
    return spec.text
