"""Shared test configuration.

Hypothesis profiles: "ci" (selected when CI is set) bounds examples and
drops deadlines, since numba compiles on first call; "dev" (default) is the
same with a few more examples; "thorough" runs many more. Choose with
``HYPOTHESIS_PROFILE=thorough python -m pytest``.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", deadline=None, max_examples=60, derandomize=True, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("dev", deadline=None, max_examples=100, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", deadline=None, max_examples=2000, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
