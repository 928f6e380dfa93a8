"""Tuning policies: one frozen object per backend (per compute capability on CUDA).

Kept apart from the algorithms, as CUB keeps its tuning policies apart from
its dispatch and kernels: a planner reads every value it may choose
differently from its backend's policy, never from a module constant or a
mutable dict. The plan cache keys on the policy object itself, so no list of
names can fall behind what the planners read. ``docs/tuning.md`` says why each
value is what it is.

Tests, probes and measurements change tuning through one explicit override:
``with rotate._backends.cpu.tuning.override(tile_bytes=64): ...`` (or ``.cuda``).
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Callable, Dict, Iterator


class Policy:
    """Base of the frozen tuning dataclasses: a hash computed once (the plan key hashes it every call)."""

    _hash: int

    def _seal(self) -> None:
        names = [f.name for f in dataclasses.fields(self)]  # type: ignore[arg-type]  # subclasses are dataclasses
        for name in names:
            value = getattr(self, name)
            if isinstance(value, list):  # a list would make the policy unhashable: take a tuple
                object.__setattr__(self, name, tuple(value))
        object.__setattr__(self, "_hash", hash(tuple(getattr(self, name) for name in names)))

    def _cached_hash(self) -> int:
        return self._hash


class Policies:
    """The active tuning of one backend: a policy per hardware class, and the one override.

    ``policy_for(hardware)`` returns the frozen default for a hardware class
    (a compute capability on CUDA; None on the CPU). :meth:`current` applies
    the override's fields on top and caches the result, so a call costs one
    dict lookup.
    """

    def __init__(self, name: str, policy_for: Callable[[Any], Any]) -> None:
        self._name = name
        self._policy_for = policy_for
        self._fields: Dict[str, Any] = {}
        self._resolved: Dict[Any, Any] = {}

    def current(self, hardware: Any = None) -> Any:
        policy = self._resolved.get(hardware)
        if policy is None:
            policy = self._policy_for(hardware)
            if self._fields:
                policy = dataclasses.replace(policy, **self._fields)
            self._resolved[hardware] = policy
        return policy

    @contextlib.contextmanager
    def override(self, **fields: Any) -> Iterator[None]:
        """Change tuning fields for the duration of a ``with`` block (tests, probes, measurements)."""
        known = {f.name for f in dataclasses.fields(self._policy_for(None))}
        unknown = set(fields) - known
        if unknown:
            raise KeyError(f"unknown {self._name} tuning fields {sorted(unknown)}; known: {sorted(known)}")
        saved = dict(self._fields)
        self._fields.update(fields)
        self._resolved.clear()
        try:
            yield
        finally:
            self._fields = saved
            self._resolved.clear()

    def overridden(self) -> Dict[str, Any]:
        """The fields the override changes now (result files record them)."""
        return dict(self._fields)
