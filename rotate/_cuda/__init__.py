"""The GPU backend (numba-cuda). Private: reach it through rotate.roll/rotate/plan.

Importing this package imports numba.cuda but does not initialise the driver. It imports the schedules,
which fills the schedule registry (``schedules/__init__.py`` holds the one ordered list), so every module
of the package sees a filled registry.
"""

from . import schedules  # noqa: F401
