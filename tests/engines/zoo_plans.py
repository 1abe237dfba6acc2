"""What each engine is expected to do with each zoo case: run it, wait for a rule, or refuse it.

An engine's plan (``plan_<engine>.py``) lists the cases it refuses by design (with the error
and a reason) and the cases that need a rule which may not be registered yet (as probes: a
callable and example arguments). Everything else must match finite differences. A pending
case is not skipped: until its rule exists the engine must raise ``NoRuleError`` for it, and
once the rule is registered the case is compared with finite differences like the others.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import chainrules as cr
from chainrules.testing.zoo import ZooCase


@dataclasses.dataclass(frozen=True)
class Refusal:
    """The error an engine raises for a case it does not support, and why."""

    error: type[BaseException]
    message: str  # a fragment the message must contain
    reason: str


@dataclasses.dataclass(frozen=True)
class Probe:
    """A rule a case needs: present when ``cr.rrule(f, *args)`` returns a rule result."""

    f: Callable
    args: tuple

    def available(self) -> bool:
        try:
            return cr.rrule(self.f, *self.args) is not None
        except cr.NoRuleError:
            return False

    def __repr__(self) -> str:
        return f"rule for {cr.core.callable_name(self.f)}{tuple(type(a).__name__ for a in self.args)}"


@dataclasses.dataclass(frozen=True)
class EnginePlan:
    engine: str
    refused_tags: dict[str, Refusal] = dataclasses.field(default_factory=dict)
    refused: dict[str, Refusal] = dataclasses.field(default_factory=dict)
    needs: dict[str, tuple[Probe, ...]] = dataclasses.field(default_factory=dict)

    def refusal(self, case: ZooCase) -> Refusal | None:
        if case.name in self.refused:
            return self.refused[case.name]
        for tag in sorted(case.tags):
            if tag in self.refused_tags:
                return self.refused_tags[tag]
        return None

    def missing(self, case: ZooCase) -> list[Probe]:
        return [p for p in self.needs.get(case.name, ()) if not p.available()]

    def status(self, case: ZooCase) -> str:
        """'refused', 'pending' (a needed rule is missing) or 'run'."""
        if self.refusal(case) is not None:
            return "refused"
        return "pending" if self.missing(case) else "run"

    def pullback(self, case: ZooCase):
        return cr.pullback(case.f, *case.args, engine=self.engine, **case.kwargs)
