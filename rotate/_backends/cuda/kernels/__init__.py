"""The GPU kernels, one module a family (their schedules, in ``rotate/_backends/cuda/schedules/``, plan and launch them).

``memops`` holds the PTX intrinsics and their simulator twins; ``common`` the device functions several
families share. Families: ``chain``, ``block_swaps`` (block-swap and reversal passes), ``panels``
(``lane-panels``), ``lane_swaps``, ``walks`` (``lane-walks``), ``cycles`` (``row-cycles``), ``half_swaps``,
``strips`` (``row-strips``), ``columns`` (``column-panels``).
"""
