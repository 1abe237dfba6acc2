"""The tour behind ``make demo`` (``python -m chainrules demo``)."""

from __future__ import annotations

import operator

import chainrules as cr


def f(a, b):
    return a / (a + b * b)


def seed_example() -> None:
    """Seed 001's example, differentiated by chaining the rules along its Wengert list by hand."""
    a, b = 2.0, 3.0
    print("f(a, b) = a / (a + b*b)  at (a, b) = (2.0, 3.0)\n")
    print("Wengert list, each line through its rrule:")
    print("    y1, back1 = rrule(operator.mul, b, b)")
    print("    y2, back2 = rrule(operator.add, a, y1)")
    print("    y3, back3 = rrule(operator.truediv, a, y2)")
    y1, back1 = cr.rrule(operator.mul, b, b)
    y2, back2 = cr.rrule(operator.add, a, y1)
    y3, back3 = cr.rrule(operator.truediv, a, y2)
    _, da_3, dy2 = back3(1.0)
    _, da_2, dy1 = back2(dy2)
    _, db_1a, db_1b = back1(dy1)
    da = cr.add(da_3, da_2)
    db = cr.add(db_1a, db_1b)
    print(f"\nf(2, 3)  = {y3:.4f}")
    print(f"df/da    = {da:.4f}   (analytic b^2/(a+b^2)^2 = {b * b / (a + b * b) ** 2:.4f})")
    print(f"df/db    = {db:.4f}   (analytic -2ab/(a+b^2)^2 = {-2 * a * b / (a + b * b) ** 2:.4f})")
    print(f"\nrules registered: {len(cr.rules.list_rules())}")


def main() -> None:
    seed_example()
