"""Backend-neutral index math of the schedules: plain functions that the CUDA kernels, the CPU's
``@njit`` code and the emulator (``rotate._testing.emulator``) all call, so they cannot drift apart.

``chain`` (the chain-ordered rotation: tiles, chain order, the pre-read plan table, realignment),
``walks`` (a block walking its own lane in chain order: pre-read bytes in closed form, the tile choice),
``free_lanes`` (the CPU's lanes that share nothing), ``gries_mills`` (lane-swaps' block swaps),
``rowperm`` (row permutations of multi-axis rolls, half swaps, strips) and ``exchange`` (the distributed
roll's exchange between ranks). Nothing here imports a backend.
"""
