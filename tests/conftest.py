"""Shared test configuration.

Hypothesis profiles: "ci" (selected when CI is set) bounds examples and
drops deadlines, since numba compiles on first call; "dev" (default) is the
same with a few more examples; "thorough" runs many more; "mutation" (tools/mutation.py) does not shrink. Choose with
``HYPOTHESIS_PROFILE=thorough python -m pytest``.
"""

import os

from hypothesis import HealthCheck, Phase, settings

settings.register_profile("ci", deadline=None, max_examples=60, derandomize=True, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("dev", deadline=None, max_examples=100, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", deadline=None, max_examples=2000, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
# tools/mutation.py: a failing example is enough to kill a mutant; shrinking it only costs time.
settings.register_profile("mutation", deadline=None, max_examples=60, derandomize=True,
                          phases=[Phase.explicit, Phase.reuse, Phase.generate],
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
