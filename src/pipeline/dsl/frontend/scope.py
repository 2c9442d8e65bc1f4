"""The locals of one DSL function body while it is parsed: which IR name each binds now.

Outside any ``if`` a local's IR name is its own. Inside a branch every assignment binds a
branch-private name, so that both branches can be parsed from the same state and merged
afterwards by a choice per local (see ``statements``). In a body whose IR must assign each
name once (a scan operator's, which is not inlined), a second binding of a name, or a binding
of a parameter's name, binds a private name too.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence

import attrs

from pipeline.dsl.errors import DSLNameError, DSLTypeError
from pipeline.dsl.frontend.source import FunctionSource
from pipeline.dsl.frontend.tuples import Names, component_names, shape

__all__ = ["Bindings", "Scope"]


@attrs.frozen
class Bindings:
    """A saved state of a scope's locals (taken before an ``if``, restored per branch)."""

    locals: frozenset[str]
    renames: Mapping[str, str]
    unbound: Mapping[str, int]
    tuples: Mapping[str, Names]
    mixed: Mapping[str, int]


@attrs.define
class Scope:
    """The locals of one function body, and the IR name each is bound to now."""

    source: FunctionSource
    params: frozenset[str] = frozenset()
    single_assignment: bool = False
    locals: set[str] = attrs.field(factory=set)
    # Inside a branch of an `if`, a local's current binding has a branch-private name.
    renames: dict[str, str] = attrs.field(factory=dict)
    # Locals assigned in only one branch of an `if` (and not before it): the line of that
    # `if`. Only a read of one is an error (Python's UnboundLocalError on the other path).
    unbound: dict[str, int] = attrs.field(factory=dict)
    # Names that hold a tuple on one path through an `if` and another shape on the other: the
    # line of that `if`. As for `unbound`, only a read of one is an error.
    mixed: dict[str, int] = attrs.field(factory=dict)
    branches: int = 0
    private_names: int = 0
    # Tuple-valued names (a tuple parameter or carry, a tuple local): their component
    # locals, nested like the value.
    tuples: dict[str, Names] = attrs.field(factory=dict)

    def current(self, name: str) -> str:
        """The IR name a read of the local (or parameter) ``name`` reads here."""
        return self.renames.get(name, name)

    def fresh(self) -> int:
        """A number no other private name of this body has used."""
        self.private_names += 1
        return self.private_names

    def bind(self, names: Sequence[str]) -> tuple[str, ...]:
        """The targets an assignment of ``names`` binds: the names themselves outside any
        branch, branch-private names inside one (the ``if`` merges them afterwards) and for
        a name bound again in a single-assignment body."""
        targets = []
        for name in names:
            rebound = name in self.locals or name in self.params
            self.locals.add(name)
            self.unbound.pop(name, None)
            self.mixed.pop(name, None)
            if self.branches:
                self.renames[name] = f"{name}__if{self.fresh()}"
            elif self.single_assignment and rebound:
                self.renames[name] = f"{name}__v{self.fresh()}"
            else:
                self.renames.pop(name, None)
            targets.append(self.current(name))
        return tuple(targets)

    def tuple_local(self, name: str, value: object) -> Names:
        """Make ``name`` a tuple of component locals nested like ``value``; their names."""
        components = component_names(name, shape(value))
        self.tuples[name] = components
        self.mixed.pop(name, None)
        return components

    def single_local(self, name: str) -> None:
        """Make ``name`` a local of one value, whatever it was (``t = a + b`` after
        ``t = a, b``: as in Python, the name holds the new value alone)."""
        self.tuples.pop(name, None)
        self.mixed.pop(name, None)

    def check_bound(self, name: str, leaves: Sequence[str], node: ast.AST) -> None:
        """Refuse a read of ``name`` (whose locals are ``leaves``) where one of them was
        assigned in only one branch of an earlier `if`.

        Raises:
            DSLNameError: such a read.
        """
        if name in self.mixed:
            raise self.source.error(
                DSLTypeError,
                f"{name!r} is read here but holds values of different shapes on the two paths "
                f"through the `if` at line {self.mixed[name]} (a tuple on one, not on the "
                "other); give it values of one shape on both paths, or use another name",
                node,
            )
        lines = [self.unbound[leaf] for leaf in leaves if leaf in self.unbound]
        if lines:
            raise self.source.error(
                DSLNameError,
                f"{name!r} is read here but is assigned in only one branch of the `if` at line "
                f"{lines[0]} and not before it, so on the other path it has no value; assign "
                "it in both branches (or before the `if`)",
                node,
            )

    def save(self) -> Bindings:
        """The current bindings, to restore later."""
        return Bindings(
            frozenset(self.locals),
            dict(self.renames),
            dict(self.unbound),
            dict(self.tuples),
            dict(self.mixed),
        )

    def restore(self, saved: Bindings) -> None:
        """Go back to ``saved`` bindings."""
        self.locals = set(saved.locals)
        self.renames = dict(saved.renames)
        self.unbound = dict(saved.unbound)
        self.tuples = dict(saved.tuples)
        self.mixed = dict(saved.mixed)

    def bound_names(self) -> dict[str, str]:
        """Each local's current IR name."""
        return {name: self.current(name) for name in self.locals}
