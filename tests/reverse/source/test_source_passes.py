"""Each pass on its own: parse, normalize, lower, simplify, and the runtime helpers."""

import ast
import math
import operator
import textwrap
from collections import namedtuple

import numpy as np
import pytest

import chainrules as cr
from chainrules.reverse.source import ir, parse, runtime
from chainrules.reverse.source.lower import lower
from chainrules.reverse.source.names import Namer
from chainrules.reverse.source.normalize import normalize
from chainrules.reverse.source.simplify import REAL, analyze


def function_node(source: str) -> ast.FunctionDef:
    return ast.parse(textwrap.dedent(source)).body[0]


def normalized(source: str) -> str:
    node = function_node(source)
    return ast.unparse(normalize(node, Namer.for_function(node)))


def lowered(source: str) -> ir.Function:
    node = function_node(source)
    namer = Namer.for_function(node)
    return lower(normalize(node, namer), namer, "<test>")


# ----- parse ----------------------------------------------------------------------------------

first, second = (lambda x: x + 1), (lambda x: x * 2)  # two lambdas on one line


def decorated(fn):
    return fn


@decorated
def a_decorated_function(x):
    return x


def test_lambdas_on_one_line_are_told_apart():
    assert ast.unparse(parse.function_source(first).node.body) == "x + 1"
    assert ast.unparse(parse.function_source(second).node.body) == "x * 2"


def test_nested_and_decorated_definitions():
    def outer():
        def inner(y):
            return y - 1

        return inner

    assert parse.function_source(outer()).node.name == "inner"
    assert parse.function_source(a_decorated_function).node.name == "a_decorated_function"


def test_methods():
    class Box:
        def area(self, w):
            return w * w

    source = parse.function_source(Box.area)
    assert source.name == "area" and source.filename == __file__
    assert source.line(source.node.lineno).startswith("def area")


def test_library_code_is_recognized():
    import json
    import statistics

    assert parse.is_library_code(statistics.fmean.__code__)
    assert parse.is_library_code(json.dumps.__code__)
    assert parse.is_library_code(cr.rules.list_rules.__code__)
    assert not parse.is_library_code(test_methods.__code__)
    from chainrules.testing.zoo import case

    assert parse.is_library_code(case.__code__) is False  # the zoo is user code the engines run


def test_missing_source():
    namespace = {}
    exec("def made(x):\n    return x\n", namespace)
    with pytest.raises(parse.NoSourceError):
        parse.function_source(namespace["made"])


# ----- normalize --------------------------------------------------------------------------------


def test_a_guard_clause_takes_the_rest_into_its_else_branch():
    text = normalized(
        """
        def f(x):
            '''doc'''
            if x > 0:
                return x
            y = x * 2
            return y
        """
    )
    assert text == textwrap.dedent(
        """\
        def f(x):
            if x > 0:
                retval = x
            else:
                y = x * 2
                retval = y
            return retval"""
    )


def test_deeper_returns_use_a_flag():
    text = normalized(
        """
        def f(x, y):
            if y > 1:
                if x < 0:
                    return 0.0
                x = x * 3
            elif y < 0:
                return y
            return x + y
        """
    )
    assert "returned = True" in text and "if not returned:" in text
    assert text.startswith("def f(x, y):\n    returned = False\n    retval = None\n")


def test_a_function_without_return_returns_none():
    assert normalized("def f(x):\n    x = x + 1\n").endswith("return None")


def test_augmented_and_annotated_and_chained_assignments():
    node = normalize(
        function_node("def f(x):\n    x += 1\n    y: float = x\n    a = b = y\n    return a"), Namer(set())
    )
    assert ast.unparse(node).splitlines()[1:] == [
        "    x = x + 1",
        "    y = x",
        "    a = y",
        "    b = a",
        "    return a",
    ]
    assert node.body[0].augmented


def test_a_lambda_becomes_a_function():
    node = ast.parse("lambda x, y=2: x * y", mode="eval").body
    fn = normalize(node, Namer({"x", "y"}))
    assert ast.unparse(fn) == "def <lambda>(x, y=2):\n    return x * y"


# ----- lower --------------------------------------------------------------------------------------


def test_wengert_list_of_expressions():
    fn = lowered(
        """
        def f(x, y, obj):
            a = -x ** 2 @ y
            b = obj.w[1:3, None] + obj.scale(a, key=1)
            c = (a, *b), [x], {'k': y, **obj}
            return x if x in y else not y
        """
    )
    assert str(fn) == textwrap.dedent(
        """\
        def f(x, y, obj):
            y_1 = pow(x, 2)
            y_2 = neg(y_1)
            a = matmul(y_2, y)
            y_4 = getattr(obj, 'w')
            y_5 = slice(1, 3, None)
            y_6 = (y_5, None)
            y_7 = getitem(y_4, y_6)
            y_8 = obj.scale(a, key=1)
            b = add(y_7, y_8)
            y_10 = (a, *b)
            y_11 = [x]
            y_12 = {'k': y, **obj}
            c = (y_10, y_11, y_12)
            y_15 = contains(y, x)
            if y_15:
                y_14 = x
            else:
                y_14 = not_(y)
            return y_14"""
    )


def test_calls_with_variable_keywords_or_stars_take_the_apply_form():
    fn = lowered("def f(g, x, xs):\n    return g(x, *xs, k=x)")
    assert [str(s) for s in fn.body] == ["y_1 = (x, *xs)", "y_2 = {'k': x}", "y_3 = g(*y_1, **y_2)", "return y_3"]


def test_unpacking_nested_and_starred():
    fn = lowered("def f(t):\n    (a, b), *rest, c = t\n    return a")
    assert [str(s) for s in fn.body] == ["item, *rest, c = t", "a, b = item", "return a"]


def test_comparison_chains_and_boolean_operators_keep_their_laziness():
    fn = lowered("def f(x, y):\n    return 0 < x < y or y")
    assert str(fn).splitlines()[1:] == [
        "    y_1 = lt(0, x)",
        "    if y_1:",
        "        y_1 = lt(x, y)",
        "    if y_1:",
        "        pass",
        "    else:",
        "        y_1 = y",
        "    return y_1",
    ]


def test_statements_are_numbered_and_keep_their_source_line():
    fn = lowered("def f(x):\n    y = x * 2\n    assert y > 0, 'positive'\n    return y")
    lines = [(s.index, s.line, str(s)) for s in ir.walk(fn.body)]
    assert lines[0] == (1, 2, "y = mul(x, 2)")
    assert (lines[1][1], lines[2][1]) == (3, 3)
    assert "AssertionError" in lines[3][2] and isinstance(list(ir.walk(fn.body))[-2], ir.Raise)


# ----- simplify -------------------------------------------------------------------------------------


def plan_of(source: str, **types):
    return analyze(lowered(source), types, {}, {"math": math, "np": np, "len": len}, "<test>")


def test_operators_on_real_scalars_are_inlined():
    plan = plan_of("def f(a, b):\n    return a / (a + b * b)", a=float, b=float)
    assert set(plan.mode.values()) == {"inline", "return"}
    assert plan.types["y_3"] is float


def test_other_types_go_through_the_dispatcher():
    plan = plan_of("def f(a, b):\n    return a * b", a=np.ndarray, b=float)
    assert plan.mode[1] == "pullback"


def test_integers_and_floats_join_to_a_real():
    plan = plan_of("def f(x, n):\n    y = x\n    if n > 0:\n        y = n\n    return y * 2", x=float, n=int)
    assert plan.types["y"] is REAL
    assert plan.mode[max(plan.mode)] == "return"
    assert "inline" in plan.mode.values()


def test_inactive_and_useless_statements_are_plain():
    plan = plan_of(
        "def f(x, n):\n    k = n + 1\n    flag = x > 0\n    unused = math.exp(x)\n    return x * k if flag else x",
        x=float,
        n=int,
    )
    by_target = {s.target: plan.mode[s.index] for s in ir.walk(plan.fn.body) if isinstance(s, ir.Assign)}
    assert by_target["k"] == "inline"  # an int argument is differentiable: n + 1 is active
    assert by_target["flag"] == "plain"  # a comparison carries no derivative
    assert by_target["unused"] == "plain"  # active but never reaching the output
    assert "unused" not in plan.useful and "k" in plan.useful


def test_a_module_function_is_resolved_and_guarded():
    plan = plan_of("def f(x):\n    return math.sin(x) + 1.0", x=float)
    assert plan.types["y_1"] is float and plan.mode[2] == "inline"
    assert ("math", math) in plan.guards


def test_a_rule_of_ones_own_for_floats_stops_inlining():
    class Mine(float):
        pass

    @cr.rrule.register(operator.mul, Mine, Mine)
    def rrule_mul_mine(a, b):
        return a * b, lambda dy: (cr.NoTangent(), dy * b, dy * a)

    try:
        plan = plan_of("def f(a, b):\n    return a * b", a=float, b=float)
        assert plan.mode[1] == "inline"  # the stock rule still serves floats
        assert "inline" not in analyze(plan.fn, {"a": Mine, "b": Mine}, {}, {}, "<test>").mode.values()
    finally:  # the rule would stay registered for the rest of the session: take it out again
        cr.rrule.unregister(operator.mul, Mine, Mine)


def test_the_plan_prints():
    text = str(plan_of("def f(a):\n    return a * a", a=float))
    assert "y_1 = mul(a, a)" in text and "# inline" in text and "# active: a: float, y_1: float" in text


# ----- names ------------------------------------------------------------------------------------------


def test_names_never_clash_with_the_users():
    namer = Namer.for_function(function_node("def f(y_1, da):\n    pb_2 = y_1\n    return da"))
    assert namer.temp() == "y_2"
    assert namer.fresh("da") == "da_2" and namer.fresh("pb_2") == "pb_2_2"


# ----- runtime helpers ----------------------------------------------------------------------------------

Point = namedtuple("Point", "x y")


def test_split_and_field():
    assert runtime.split(cr.Tangent[Point](x=1.0), 2) == (1.0, cr.ZeroTangent())
    assert runtime.split([1.0, 2.0], 2) == (1.0, 2.0)
    with pytest.raises(ValueError):
        runtime.split((1.0,), 2)
    assert runtime.field(cr.Tangent[dict]({"a": 1.0}), "b") == cr.ZeroTangent()
    assert runtime.field({"a": 2.0}, "a") == 2.0


def test_unpack_gives_the_structure_back():
    (a, rest, c), back = runtime.unpack([1.0, 2.0, 3.0, 4.0], 3, 1)
    assert (a, rest, c) == (1.0, [2.0, 3.0], 4.0)
    assert back((10.0, cr.Tangent[list](20.0, 30.0), 40.0)) == cr.Tangent[list](10.0, 20.0, 30.0, 40.0)
    (x, y), back = runtime.unpack(Point(1.0, 2.0), 2, None)
    assert back((5.0, cr.ZeroTangent())) == cr.Tangent[Point](x=5.0, y=cr.ZeroTangent())
    (r0, r1), back = runtime.unpack(np.arange(4.0).reshape(2, 2), 2, None)
    assert back((np.ones(2), cr.ZeroTangent())).tolist() == [[1.0, 1.0], [0.0, 0.0]]


def test_pack_and_pack_dict():
    value, back = runtime.pack("tuple", (1.0, [2.0, 3.0]), (False, True))
    assert value == (1.0, 2.0, 3.0)
    assert back(cr.Tangent[tuple](4.0, 5.0, 6.0)) == (4.0, cr.Tangent[list](5.0, 6.0))
    value, back = runtime.pack_dict(("a", None, "b"), (1.0, {"a": 2.0, "c": 3.0}, 4.0))
    assert value == {"a": 2.0, "c": 3.0, "b": 4.0}
    d = back({"a": 10.0, "b": 20.0, "c": 30.0})
    assert d == (cr.ZeroTangent(), cr.Tangent[dict]({"a": 10.0, "c": 30.0}), 20.0)


def test_closure_tangent_folds_a_recursive_closure():
    def fn():
        return None

    inner = runtime.closure_tangent(fn, ("w",), (2.0,), (1.0,))
    assert inner == cr.Tangent[type(fn)](w=1.0)
    outer = runtime.closure_tangent(fn, ("w", "fn"), (2.0, fn), (3.0, inner))
    assert outer == cr.Tangent[type(fn)](w=4.0)
    assert runtime.closure_tangent(fn, ("w",), (2.0,), (cr.ZeroTangent(),)) == cr.ZeroTangent()


def test_seed_projection():
    assert runtime.project_real(np.float64(2.0)) == 2.0 and type(runtime.project_real(2)) is float
    assert runtime.project_real(1.0 + 2.0j) == 1.0
    assert runtime.project_real(cr.Thunk(lambda: 3.0)) == 3.0
    assert runtime.project_real(cr.ZeroTangent()) == cr.ZeroTangent()


# ----- part 2: loops, comprehensions, writes ----------------------------------------------------------


def test_continue_moves_the_rest_of_the_body_into_the_other_branch():
    text = normalized(
        """
        def f(xs):
            s = 0.0
            for x in xs:
                if x < 0:
                    continue
                s += x
            return s
        """
    )
    assert "continue" not in text
    assert "        if x < 0:\n            pass\n        else:\n            s = s + x" in text


def test_break_with_else_uses_a_stop_flag():
    text = normalized(
        """
        def f(xs):
            for x in xs:
                if x > 3:
                    break
            else:
                x = 0.0
            return x
        """
    )
    assert "stop = False" in text and "stop = True\n            break" in text and "if not stop:" in text


def test_a_return_in_nested_loops_leaves_them_all():
    text = normalized(
        """
        def f(xs):
            for x in xs:
                for y in xs:
                    if x * y > 3:
                        return x
            return 0.0
        """
    )
    assert text.count("break") == 2 and "if returned:" in text and "if not returned:" in text


def test_deeper_jumps_in_a_loop_use_skip_and_stop_flags():
    text = normalized(
        """
        def f(xs, y):
            for x in xs:
                if y > 5:
                    if x > 3:
                        break
                    y = y * 2
                y = y + x
            return y
        """
    )
    assert "skip = False" in text and "if not skip:" in text and "if stop:\n            break" in text


def test_loops_and_writes_lower_to_the_wengert_list():
    fn = lowered(
        """
        def f(xs, n):
            out = [0.0] * n
            for i in range(n):
                out[i] += xs[i]
            k = 0
            while k < n:
                k += 1
            out.append(k)
            return out
        """
    )
    text = str(fn)
    assert "for i in y_3:" in text and "out[i] = y_7" in text
    assert "while True:" in text and "if not y_" in text and "out.append(k)" in text
    assert {"y_5", "y_6", "y_7"} <= fn.temps and "out" not in fn.temps


def test_comprehensions_lower_to_loops_that_fill_a_new_container():
    fn = lowered("def f(xs, ys):\n    return {a: a * b for a in xs if a > 0 for b in ys}")
    text = str(fn)
    assert "comprehension = {}" in text and "comprehension[a] = " in text
    assert text.index("for a in xs:") < text.index("for b in ys:")
    assert "comprehension" not in fn.temps  # it lives across iterations


def test_loop_analysis():
    plan = plan_of(
        "def f(X, w):\n"
        "    total = 0.0\n"
        "    for i in range(len(X)):\n"
        "        total = total + X[i] * w\n"
        "    return total",
        X=np.ndarray,
        w=float,
    )
    loop = next(s for s in ir.walk(plan.fn.body) if isinstance(s, ir.For))
    inside = next(s for s in ir.walk(loop.body) if isinstance(s, ir.Assign))
    assert loop.index in plan.range_loops
    assert plan.available("i", inside) and plan.available("X", inside) and plan.available("w", inside)
    assert not plan.available("total", inside)
    assert not plan.stable("total") and plan.mode[loop.index] == "loop"


def test_indexing_a_float_array_of_known_type_is_inlined():
    from chainrules.reverse.source.simplify import ArrayType

    plan = plan_of("def f(X, i):\n    return X[i] * 2.0", X=ArrayType(np.dtype(float), 1), i=int)
    assert plan.mode[1] == "index" and plan.types["y_1"] is np.float64
    assert plan_of("def f(X, i):\n    return X[i]", X=np.ndarray, i=int).mode[1] == "pullback"


def test_written_containers_must_be_new_and_local():
    with pytest.raises(cr.UnsupportedSyntaxError, match="writing into the argument `x`"):
        plan_of("def f(x):\n    x[0] = 1.0\n    return x", x=list)
    with pytest.raises(cr.UnsupportedSyntaxError, match="must be bound to a new object"):
        plan_of("def f(x):\n    y = x\n    y.append(1.0)\n    return y", x=list)
    plan = plan_of("def f(x):\n    y = [x]\n    y.append(x * 2)\n    return y", x=float)
    assert plan.buffers == {"y": "new"} and plan.mode[3] == "mutate"


def test_a_while_condition_that_computes_a_used_value_is_refused():
    with pytest.raises(cr.UnsupportedSyntaxError, match="condition of a `while` loop"):
        plan_of("def f(x):\n    while (y := x * 2) < 10:\n        x = y\n    return x", x=float)


def test_runtime_writes_and_their_pullbacks():
    a = np.zeros(3)
    written, back = runtime.setitem(a, 1, 2.5)
    dvalue, da, owned = back(np.array([1.0, 2.0, 3.0]), False)
    assert written is a and a.tolist() == [0.0, 2.5, 0.0] and dvalue == 2.0 and da.tolist() == [1.0, 0.0, 3.0] and owned
    lst = [1.0]
    runtime.append(lst, 2.0)
    dvalue, dlst, owned = runtime.append_pullback(cr.Tangent[list](5.0, 6.0), False)
    assert lst == [1.0, 2.0] and dvalue == 6.0 and dlst == [5.0] and owned
    back = runtime.extend(lst, (3.0, 4.0))
    dvalues, dlst, _ = back([1.0, 2.0, 3.0, 4.0], False)
    assert dvalues == cr.Tangent[tuple](3.0, 4.0) and dlst == [1.0, 2.0]
    d = {}
    written, back = runtime.setitem(d, "k", 1.0)
    assert written is d and back({"k": 7.0, "j": 1.0}, False) == (7.0, {"j": 1.0}, True)
    with pytest.raises(cr.UnsupportedSyntaxError, match="on a tuple: the source engine follows the appends of a list"):
        runtime.append((1.0,), 2.0)


def test_item_cotangents_and_add_at():
    items = runtime.item_cotangents(np.ones((3, 2)), 2)
    items.put(1, np.array([1.0, 2.0]))
    assert items.result().tolist() == [[0.0, 0.0], [1.0, 2.0], [0.0, 0.0]]
    items = runtime.item_cotangents([1.0, 2.0, 3.0], 2)
    items.put(0, 5.0)
    assert items.result() == cr.Tangent[list](5.0, cr.ZeroTangent(), cr.ZeroTangent())
    like = np.ones(3)
    acc, owned = runtime.add_at(cr.ZeroTangent(), False, like, 2, 4.0)
    assert acc.tolist() == [0.0, 0.0, 4.0] and owned
    borrowed = np.ones(3)
    acc, owned = runtime.add_at(borrowed, False, like, 0, 1.0)
    assert borrowed.tolist() == [1.0, 1.0, 1.0] and acc.tolist() == [2.0, 1.0, 1.0]
