"""Backend-neutral index math of the schedules: plain functions that the CUDA kernels, the CPU's
``@njit`` code and the emulator (``rotate._testing.emulator``) all call, so they cannot drift apart.

``chain`` (the chain-ordered rotation: tiles, chain order, pre-read plan, lane walks, Gries-Mills swaps,
lanes that share nothing), ``rowperm`` (row permutations of multi-axis rolls, half swaps, strips) and
``exchange`` (the distributed roll's exchange between ranks). Nothing here imports a backend.
"""
