"""Loud failures: missing rules, library code, missing source, unsupported syntax, each pointing at
the user's own file and line."""

import operator
import pathlib
import statistics

import numpy as np
import pytest

import chainrules as cr
from chainrules.reverse.source import pullback_full, show

HERE = pathlib.Path(__file__).resolve()
conjugate = operator.methodcaller("conjugate")  # a C-level callable nobody registers a rule for


def line_of(marker: str) -> int:
    """The line of this file that contains ``marker`` (in a comment)."""
    for number, line in enumerate(HERE.read_text().splitlines(), start=1):
        if marker in line and "line_of" not in line:
            return number
    raise LookupError(marker)


def calls_something_without_a_rule(x):
    y = x * 2.0
    return conjugate(y) + 1.0  # <- no rule here


def calls_library_python(x, y):
    return statistics.covariance([x, y], [1.0, 3.0]) * 2.0  # <- library call (a function without a rule)


def outer(x):
    return calls_something_without_a_rule(x) * 3.0


def test_a_call_without_a_rule_names_callable_types_and_user_line():
    with pytest.raises(cr.NoRuleError) as info:
        pullback_full(calls_something_without_a_rule, 1.5)
    message = str(info.value)
    assert "instance of operator.methodcaller(float)" in message
    assert f"{HERE}:{line_of('<- no rule here')}" in message
    assert "chainrules.rrule.register" in message  # the hint


def test_the_location_is_the_innermost_user_function():
    with pytest.raises(cr.NoRuleError, match=rf"at {HERE}:{line_of('<- no rule here')}"):
        pullback_full(outer, 1.5)


def test_library_code_is_never_differentiated_through_its_source():
    with pytest.raises(cr.NoRuleError) as info:
        pullback_full(calls_library_python, 1.0, 2.0)
    message = str(info.value)
    assert "statistics.covariance(list, list)" in message
    assert f"{HERE}:{line_of('<- library call')}" in message
    assert "library code is differentiated only through rules" in message


def test_a_function_without_source_has_no_rule():
    namespace = {}
    exec("def made(x):\n    return x * 2\n", namespace)
    with pytest.raises(cr.NoRuleError, match="made.*source is not available"):
        pullback_full(namespace["made"], 1.0)


def test_a_builtin_without_rule_at_the_top():
    with pytest.raises(cr.NoRuleError, match=r"operator\.methodcaller"):
        pullback_full(conjugate, 1.0)


# ----- syntax the fence refuses -------------------------------------------------------------------


def uses_yield(x):
    yield x  # <- yield


def uses_except_star(x):
    y = x
    try:  # <- try
        y = x * 2.0
    except* ValueError:
        y = 0.0
    return y


def returns_inside_finally(x):
    try:
        x = x * 2.0
    finally:
        return x  # noqa: B012  <- return in finally


def assigns_into_an_argument(x):
    x[0] = 2.0  # <- item assignment
    return x[0]


def assigns_an_attribute(obj, x):
    obj.value = x  # <- attribute assignment
    return x


def uses_global_write(x):
    global SOMETHING
    SOMETHING = x  # <- global write
    return x


def uses_locals(x):
    return locals()["x"]  # <- locals


def zero_arg_super(x):
    return super().__init__(x)  # <- super


def rebinds_a_captured_variable(x):
    w = x

    def g():
        return w

    w = 2.0 * x  # <- rebound capture
    return g()


def defines_a_class(x):
    class Inner:  # <- class
        pass

    return x


@pytest.mark.parametrize(
    "fn, marker, column, phrase",
    [
        (uses_yield, "<- yield", 5, "`yield` is not supported"),
        (uses_except_star, "<- try", 5, "`try`/`except*` is not supported by the source engine"),
        (uses_except_star, "<- try", 5, 'differentiate the function with engine="tape"'),
        (returns_inside_finally, "<- return in finally", 9, "`return` inside `finally` is not supported"),
        (assigns_into_an_argument, "<- item assignment", 5, "writing into the argument `x` in place"),
        (assigns_an_attribute, "<- attribute assignment", 5, "assigning to an attribute"),
        (uses_global_write, "<- global write", 5, "the global variable `SOMETHING`"),
        (uses_locals, "<- locals", 12, "`locals()` is not supported"),
        (zero_arg_super, "<- super", 12, "`super()` without arguments outside a method of a class"),
        (rebinds_a_captured_variable, "<- rebound capture", 5, "`w` is read by a nested function"),
        (defines_a_class, "<- class", 5, "a class definition"),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_unsupported_syntax_names_file_line_and_column(fn, marker, column, phrase):
    args = (
        (object(), 1.0) if fn is assigns_an_attribute else (np.ones(2),) if fn is assigns_into_an_argument else (1.0,)
    )
    with pytest.raises(cr.UnsupportedSyntaxError) as info:
        pullback_full(fn, *args)
    message = str(info.value)
    assert message.startswith(f"{HERE}:{line_of(marker)}:{column}: "), message
    assert phrase in message


def test_show_fences_too():
    with pytest.raises(cr.UnsupportedSyntaxError, match="`yield`"):
        show(uses_yield, 1.0)


def updates_an_array_in_place(x):
    y = x * 2.0
    held = [y]  # the list holds y's array: the update must reach it
    y += 1.0  # <- in place
    return y + held[0]


def builds_a_set(x):
    return max({x, 2.0})  # <- set


def test_an_in_place_update_of_an_array_is_refused_at_run_time():
    with pytest.raises(cr.UnsupportedSyntaxError) as info:
        pullback_full(updates_an_array_in_place, np.ones(3))
    assert str(info.value).startswith(f"{HERE}:{line_of('<- in place')}:5: ")
    assert "in place" in str(info.value)
    # on numbers the same line is a rebinding, and fine
    assert pullback_full(updates_an_array_in_place, 1.5)[1](1.0)[1] == 4.0


def updates_its_own_array(x):
    y = x * 2.0  # a new array nothing else holds
    y += 1.0
    return y


def test_an_in_place_update_of_an_array_nothing_else_holds_is_a_rebinding():
    y, back = pullback_full(updates_its_own_array, np.ones(3))
    assert np.array_equal(y, [3.0, 3.0, 3.0]) and np.array_equal(back(np.ones(3))[1], [2.0, 2.0, 2.0])


def test_a_set_of_differentiated_values_is_refused():
    with pytest.raises(cr.UnsupportedSyntaxError, match=rf"{HERE}:{line_of('<- set')}:1: a set"):
        pullback_full(builds_a_set, 1.0)


def differentiated_keyword_to_a_rule(x, lo):
    return np.var(x, correction=lo)  # <- keyword


def differentiated_keyword_with_a_position(x, lo):
    return np.clip(x, a_min=lo, a_max=None).sum()


def constant_keyword_to_a_rule(x):
    axis = 0
    return np.sum(x * x, axis=axis)


def test_a_differentiated_keyword_argument_of_a_rule_is_refused():
    # a keyword-only parameter: no position can take it
    with pytest.raises(cr.NoRuleError) as info:
        pullback_full(differentiated_keyword_to_a_rule, np.ones(3), 0.5)
    assert "'correction'" in str(info.value) and "no position of its signature can take" in str(info.value)
    assert f"{HERE}:{line_of('<- keyword')}" in str(info.value)
    # one that has a position is passed there, and differentiated
    _, back = pullback_full(differentiated_keyword_with_a_position, np.array([0.2, 0.7, 0.9]), 0.5)
    assert tuple(cr.unthunk(c) for c in back(1.0)[1:]) == (pytest.approx(np.array([0.0, 1.0, 1.0])), 1.0)
    # an inactive keyword (a constant, an index) is fine
    _, back = pullback_full(constant_keyword_to_a_rule, np.array([1.0, 2.0]))
    assert back(1.0)[1].tolist() == [2.0, 4.0]


def writes_a_nonlocal(x):
    total = 0.0

    def add(v):
        nonlocal total
        total = total + v  # <- nonlocal write

    add(x)
    return total


async def a_coroutine(x):  # <- async
    return x


def test_nonlocal_writes_and_coroutines_are_refused():
    with pytest.raises(cr.UnsupportedSyntaxError, match=rf"{HERE}:{line_of('<- nonlocal write')}:9: .*nonlocal"):
        pullback_full(writes_a_nonlocal, 1.0)
    with pytest.raises(cr.UnsupportedSyntaxError, match=rf"{HERE}:{line_of('<- async')}:1: `async def`"):
        pullback_full(a_coroutine, 1.0)


def closures_in_a_loop(x):
    fs = []
    for w in (1.0, 2.0):  # <- bound in a loop
        fs.append(lambda v: v * w)
    return fs[0](x)


def test_a_closure_over_a_loop_variable_is_refused():
    with pytest.raises(
        cr.UnsupportedSyntaxError, match=rf"{HERE}:{line_of('<- bound in a loop')}:9: .*bound in a loop"
    ):
        pullback_full(closures_in_a_loop, 1.0)


def closures_in_a_comprehension(x):
    fs = [lambda v: v * w for w in (1.0, 2.0)]  # <- bound in a comprehension
    return fs[0](x)


def test_a_closure_over_a_comprehension_variable_is_refused():
    # Python gives both closures the last w (2.0): a lowered comprehension has no cell to share
    with pytest.raises(
        cr.UnsupportedSyntaxError,
        match=rf"{HERE}:{line_of('<- bound in a comprehension')}:11: .*bound in a comprehension.*`k=k`",
    ):
        pullback_full(closures_in_a_comprehension, 1.0)


def two_arguments(a, b):
    return a * b


def test_arguments_that_do_not_fit_the_signature_name_the_function():
    with pytest.raises(TypeError, match=r"two_arguments\(\): missing a required argument: 'b'"):
        cr.gradient(two_arguments, 1.0)
    with pytest.raises(TypeError, match=r"two_arguments\(\): too many positional arguments"):
        cr.gradient(two_arguments, 1.0, 2.0, 3.0)
    with pytest.raises(TypeError, match=r"two_arguments\(\): got an unexpected keyword argument 'c'"):
        pullback_full(two_arguments, 1.0, 2.0, c=3.0)


def test_show_without_the_call_s_arguments_says_what_it_needs():
    with pytest.raises(TypeError, match=r"show\(f, \*args\) needs the arguments of a call of two_arguments"):
        show(two_arguments)
    assert "two_arguments_primal" in show(two_arguments, 1.0, 2.0)


def test_the_users_own_exception_notes_the_users_line():
    def reads_a_missing_key(x):
        d = {}
        return d["missing"] * x

    with pytest.raises(KeyError) as caught:
        cr.gradient(reads_a_missing_key, 1.0)
    line = reads_a_missing_key.__code__.co_firstlineno + 2
    assert any(f"test_source_errors.py:{line}," in note for note in caught.value.__notes__)


class Recorder:
    def __init__(self):
        self.items = []

    def append(self, v):
        self.items.append(v)


def records_into_an_object(x):
    rec = Recorder()
    for v in x:
        rec.append(v * 2.0)  # <- append on a Recorder
    return sum(v**2 for v in rec.items)


def slides_a_window(x):
    import collections

    window = collections.deque(maxlen=2)
    total = 0.0
    for v in x:
        window.append(v)  # <- append on a deque
        total = total + sum(window) ** 2
    return total


@pytest.mark.parametrize(
    "fn, marker, kind",
    [
        (records_into_an_object, "<- append on a Recorder", "Recorder"),
        (slides_a_window, "<- append on a deque", "deque"),
    ],
)
def test_append_on_an_object_that_is_not_a_list_is_refused_and_the_tape_takes_it(fn, marker, kind):
    """The source engine follows a list's appends: on another object it refuses naming the line, and
    the entry points differentiate the function on the tape, which follows the object's method."""
    x = np.array([0.3, -0.2, 0.5])
    with pytest.raises(cr.UnsupportedSyntaxError) as info:
        pullback_full(fn, x)
    assert str(info.value).startswith(f"{HERE}:{line_of(marker)}:"), str(info.value)
    assert f"on a {kind}" in str(info.value)
    eps = 1e-6
    expected = [(fn(x + eps * e) - fn(x - eps * e)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(cr.gradient(fn, x)[0], expected, rtol=1e-7)
    np.testing.assert_allclose(cr.hessian(fn, x), cr.hessian(fn, x, engine="tape"), rtol=1e-12)
