"""What every backend and the front door share, and nothing backend-specific.

``plan`` (the problem types: ``Plan``, ``Step``, ``Params``; the one plan cache's keys), ``arrays``
(recognising an array's library and memory), ``validate`` (argument checks that run before any byte
moves), ``shifts`` (``roll_rows``' per-lane shifts), ``tuning`` (the frozen tuning policies' base and
the one override), ``numba_cache`` (numba's on-disk cache stamped with the package's sources) and
``compile_notice`` (the once-a-process notice that a call compiles). Nothing here imports a backend.
"""
