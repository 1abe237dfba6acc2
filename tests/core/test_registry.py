import dataclasses
import math

import pytest

import chainrules as cr


def test_rrule_returns_none_without_rule():
    def unknown(x):
        return x

    assert cr.rrule(unknown, 1.0) is None
    assert cr.frule((cr.NoTangent(), 1.0), unknown, 1.0) is None


def test_register_rrule_and_frule():
    def triple(x):
        return 3 * x

    @cr.rrule.register(triple)
    def rrule_triple(x):
        def triple_pullback(dy):
            return cr.NoTangent(), 3 * dy

        return triple(x), triple_pullback

    @cr.frule.register(triple)
    def frule_triple(tangents, x):
        return triple(x), 3 * tangents[1]

    y, back = cr.rrule(triple, 2.0)
    assert y == 6.0 and back(1.0) == (cr.NoTangent(), 3.0)
    assert cr.frule((cr.NoTangent(), 2.0), triple, 1.0) == (3.0, 6.0)
    assert cr.rrule.has_rule(triple, 1.0)


def test_type_dispatch_most_specific_wins():
    def describe(x):
        return x

    class Base:
        pass

    class Derived(Base):
        pass

    cr.rrule.register(describe)(lambda x: ("any", None))
    cr.rrule.register(describe, Base)(lambda x: ("base", None))
    cr.rrule.register(describe, Derived)(lambda x: ("derived", None))
    assert cr.rrule(describe, 1.0)[0] == "any"
    assert cr.rrule(describe, Base())[0] == "base"
    assert cr.rrule(describe, Derived())[0] == "derived"


def test_type_dispatch_on_second_argument():
    def combine(a, b):
        return a

    cr.rrule.register(combine, object, int)(lambda a, b: ("int", None))
    cr.rrule.register(combine, object, float)(lambda a, b: ("float", None))
    assert cr.rrule(combine, 1.0, 2)[0] == "int"
    assert cr.rrule(combine, 1.0, 2.0)[0] == "float"
    assert cr.rrule(combine, 1.0, "s") is None


def test_register_rejects_non_types():
    with pytest.raises(TypeError, match="classes"):
        cr.rrule.register(abs, 3)


@dataclasses.dataclass
class Scale:
    k: float

    def __call__(self, x):
        return self.k * x


def test_callable_instance_lookup_by_type_even_when_unhashable():
    @cr.rrule.register(Scale)
    def rrule_scale(m, x):
        def scale_pullback(dy):
            return cr.Tangent[Scale](k=dy * x), dy * m.k

        return m(x), scale_pullback

    @cr.frule.register(Scale)
    def frule_scale(tangents, m, x):
        dm, dx = tangents
        return m(x), dm.k * x + m.k * dx

    m = Scale(2.0)
    with pytest.raises(TypeError):
        hash(m)
    y, back = cr.rrule(m, 3.0)
    assert y == 6.0 and back(1.0) == (cr.Tangent[Scale](k=3.0), 2.0)
    assert cr.frule((cr.Tangent[Scale](k=1.0), 0.0), m, 3.0) == (6.0, 3.0)
    # constructing a Scale is not a call of an instance: no rule
    assert cr.rrule(Scale, 2.0) is None


@dataclasses.dataclass
class Shift:
    k: float

    def __call__(self, x):
        return x + self.k


def test_rule_for_one_unhashable_object():
    m, other = Shift(2.0), Shift(2.0)
    cr.rrule.register(m)(lambda x: ("this one", None))
    assert cr.rrule(m, 1.0)[0] == "this one"
    assert cr.rrule(other, 1.0) is None


def test_scalar_rule_with_out():
    def expish(x):
        return math.exp(x)

    cr.scalar_rule(expish, lambda x, *, out: out)
    y, back = cr.rrule(expish, 1.0)
    assert back(2.0) == (cr.NoTangent(), 2.0 * math.e)
    assert cr.frule((cr.NoTangent(), 3.0), expish, 1.0) == (math.e, 3.0 * math.e)


def test_scalar_rule_two_arguments_and_zero_seed():
    def hyp(x, y):
        return math.hypot(x, y)

    cr.scalar_rule(hyp, lambda x, y, *, out: x / out, lambda x, y, *, out: y / out)
    y, back = cr.rrule(hyp, 3.0, 4.0)
    assert y == 5.0 and back(1.0) == (cr.NoTangent(), 0.6, 0.8)
    assert back(cr.ZeroTangent()) == (cr.NoTangent(), cr.ZeroTangent(), cr.ZeroTangent())
    assert back(cr.Thunk(lambda: 1.0)) == (cr.NoTangent(), 0.6, 0.8)
    assert cr.frule((cr.NoTangent(), 1.0, cr.ZeroTangent()), hyp, 3.0, 4.0) == (5.0, 0.6)
    with pytest.raises(TypeError, match="2 positional"):
        cr.rrule(hyp, 1.0)


def test_scalar_rule_int_input_gets_float_derivative():
    y, back = cr.rrule(math.log, 2)
    assert back(1.0)[1] == 0.5 and type(back(1.0)[1]) is float


def test_non_differentiable():
    def count(xs):
        return len(xs)

    cr.non_differentiable(count)
    y, back = cr.rrule(count, [1.0, 2.0])
    assert y == 2 and back(1.0) == (cr.NoTangent(), cr.NoTangent())
    assert cr.frule((cr.NoTangent(), [1.0, 1.0]), count, [1.0, 2.0]) == (2, cr.NoTangent())


def test_opt_out_for_types():
    def square(x):
        return x * x

    class Special(float):
        pass

    cr.scalar_rule(square, lambda x: 2 * x)
    cr.opt_out(square, Special)
    assert cr.rrule(square, Special(2.0)) is None
    assert cr.frule((cr.NoTangent(), 1.0), square, Special(2.0)) is None
    assert cr.rrule(square, 2.0) is not None
    assert any(f is square for f in cr.rrule.registered())


def test_opt_out_only_callable_is_not_listed():
    def only_opted(x):
        return x

    cr.opt_out(only_opted, int)
    assert all(f is not only_opted for f in cr.rrule.registered())


def test_version_changes_on_registration():
    v = cr.rrule.version
    cr.rrule.register(lambda x: x)(lambda x: (x, None))
    assert cr.rrule.version == v + 1


def test_unregister_takes_out_exactly_the_rule_for_those_types():
    def describe(x):
        return x

    @cr.rrule.register(describe)
    def rrule_any(x):
        return "any", None

    @cr.rrule.register(describe, int)
    def rrule_int(x):
        return "int", None

    assert cr.rrule(describe, 1)[0] == "int"  # the choice is cached by type: unregistering must drop it
    version = cr.rrule.version
    cr.rrule.unregister(describe, int)
    assert cr.rrule.version == version + 1
    assert cr.rrule(describe, 1)[0] == "any" and cr.rrule(describe, 1.0)[0] == "any"
    cr.rrule.unregister(describe)
    assert cr.rrule(describe, 1) is None and not cr.rrule.has_rule(describe, 1)


def test_unregister_without_such_a_rule_raises_a_lookup_error_naming_the_types():
    def describe(x):
        return x

    with pytest.raises(LookupError, match=r"no rule for .*describe.* registered for \(all arguments\)"):
        cr.frule.unregister(describe)

    @cr.frule.register(describe, float)
    def frule_float(tangents, x):
        return x, tangents[1]

    with pytest.raises(LookupError, match=r"registered for \(int\)"):
        cr.frule.unregister(describe, int)
    cr.frule.unregister(describe, float)
    assert cr.frule((cr.NoTangent(), 1.0), describe, 2.0) is None


def test_unregister_of_a_callable_instances_rule():
    class Scale:
        def __init__(self, k):
            self.k = k

        def __call__(self, x):
            return self.k * x

    @cr.rrule.register(Scale)
    def rrule_scale(s, x):
        return s(x), lambda dy: (cr.NoTangent(), s.k * dy)

    assert cr.rrule(Scale(2.0), 3.0)[0] == 6.0
    cr.rrule.unregister(Scale)
    assert cr.rrule(Scale(2.0), 3.0) is None


def test_rrule_via_ad_outside_an_engine_raises():
    with pytest.raises(cr.ChainRulesError, match="no reverse-mode engine"):
        cr.rrule_via_ad(abs, 1.0)


def test_rrule_via_ad_uses_the_active_engine():
    from chainrules.core import active_engine

    def fake_engine(f, *args):
        return f(*args), lambda dy: (cr.NoTangent(), dy)

    with active_engine(fake_engine):
        y, back = cr.rrule_via_ad(abs, -2.0)
    assert y == 2.0 and back(1.0) == (cr.NoTangent(), 1.0)
    with pytest.raises(cr.ChainRulesError):
        cr.rrule_via_ad(abs, 1.0)


def test_no_rule_error_message():
    err = cr.NoRuleError(math.gamma, (2.0, [1]), location="model.py:7")
    msg = str(err)
    assert "math.gamma(float, list)" in msg and "model.py:7" in msg and "rrule.register(math.gamma)" in msg
    assert isinstance(err, TypeError) and isinstance(err, cr.ChainRulesError)


def test_unsupported_syntax_error_message():
    err = cr.UnsupportedSyntaxError("'yield' is not supported", "model.py", 7, 4)
    assert str(err).startswith("model.py:7:4: 'yield'")


def test_batched_flag_is_recorded_on_the_rule():
    def twice(x):
        return 2 * x

    @cr.frule.register(twice, batched=True)
    def frule_twice(tangents, x):
        return twice(x), 2 * tangents[1]

    @cr.rrule.register(twice)
    def rrule_twice(x):
        return twice(x), lambda dy: (cr.NoTangent(), 2 * dy)

    assert cr.frule.lookup(twice, (1.0,)).batched is True
    assert cr.rrule.lookup(twice, (1.0,)).batched is False
    # elementwise rules from partials take a leading batch axis of tangents as they are
    cr.scalar_rule(twice, lambda x: 2.0)
    assert cr.frule.lookup(twice, (1.0,)).batched is True


def test_callable_names_of_ufunc_and_ndarray_methods():
    import numpy as np

    from chainrules.core.errors import callable_name

    assert callable_name(np.add.reduce) == "numpy.add.reduce"
    assert callable_name(np.ndarray.sum) == "numpy.ndarray.sum"
    assert callable_name(np.sin) == "numpy.sin"
    assert callable_name(math.sin) == "math.sin"


def test_scalar_rule_batched_frule_lines_up_inputs_of_different_rank():
    import numpy as np

    def weighted(x, y):
        return x * y

    cr.scalar_rule(weighted, lambda x, y: y, lambda x, y: x)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(3), rng.standard_normal((2, 3))
    for batch in (1, 2, 4):
        dxs, dys = rng.standard_normal((batch, 3)), rng.standard_normal((batch, 2, 3))
        _, dout = cr.frule((cr.NoTangent(), dxs, dys), weighted, x, y)
        assert dout.shape == (batch, 2, 3)
        for b in range(batch):
            _, expected = cr.frule((cr.NoTangent(), dxs[b], dys[b]), weighted, x, y)
            np.testing.assert_allclose(dout[b], expected)
