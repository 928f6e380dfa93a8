"""The GPU backend (numba-cuda). Private: reach it through rotate.roll/rotate/plan.

Importing this package imports numba.cuda but does not initialise the driver.
"""
