"""The GPU backend (numba-cuda). Private: reach it through rotate.roll/rotate/plan.

``backend`` is the adapter the registry in ``rotate._backends`` holds; it imports nothing of numba.cuda
until an array has been recognised as a CUDA array, so this package stays light to import. The rest
imports numba.cuda: ``device`` and ``tuning`` (the device and its tuning policy), ``registry`` (the
ordered schedule lists, filled by importing ``schedules``: one module a schedule), ``runtime`` (the
caller's stream, cached scratch, launches), ``lane_args`` (``roll_rows``' layouts) and ``kernels``
(one module a family).
"""
