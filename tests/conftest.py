"""Shared test configuration.

Hypothesis profiles: "ci" (selected when CI is set) bounds examples and
drops deadlines, since numba compiles on first call; "dev" (default) is the
same with a few more examples. Both are derandomised and keep no example
database, so the README's test command gives the same result every run (a
failure found once by a random run can never be replayed into a later plain
``pytest``). "thorough" draws fresh random examples, many more of them, and
keeps hypothesis' database: ``HYPOTHESIS_PROFILE=thorough python -m pytest``.
"mutation" (tools/mutation.py) does not shrink.
"""

import contextlib
import os

import pytest
from hypothesis import HealthCheck, Phase, settings

settings.register_profile("ci", deadline=None, max_examples=60, derandomize=True, database=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("dev", deadline=None, max_examples=100, derandomize=True, database=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", deadline=None, max_examples=2000, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
# tools/mutation.py: a failing example is enough to kill a mutant; shrinking it only costs time.
settings.register_profile("mutation", deadline=None, max_examples=60, derandomize=True, database=None,
                          phases=[Phase.explicit, Phase.reuse, Phase.generate],
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

# Plans that do not depend on what else runs on the machine: the CPU backend's thread count adapts to
# other processes' load (rotate/_backends/cpu/, usable_threads); tests/backends/test_busy.py checks that on its own.
from rotate._backends.cpu import tuning as _cpu_tuning  # noqa: E402

# For the whole session (held: a generator context dropped unreferenced would be closed, undoing it); tests
# override on top.
_SESSION_TUNING = _cpu_tuning.override(adapt_to_load=False)
_SESSION_TUNING.__enter__()


class _Tune:
    """``tune.cpu(lanes=3)`` / ``tune.cuda(tile_bytes=64)``: tuning fields for the rest of a test."""

    def __init__(self, stack):
        self._stack = stack

    def cpu(self, **fields):
        self._stack.enter_context(_cpu_tuning.override(**fields))

    def cuda(self, **fields):
        from rotate._backends.cuda import tuning as cuda

        self._stack.enter_context(cuda.override(**fields))


@pytest.fixture
def tune():
    """The one way a test changes tuning (rotate/_backends/*/tuning.py): undone when the test ends."""
    with contextlib.ExitStack() as stack:
        yield _Tune(stack)
