"""The shared case tables every backend's tests run (issue #31: one test body, many backends).

``roll`` (roll cases, runners and byte-exact checks), ``rows`` (``roll_rows`` cases), ``sim`` (the CUDA
kernels under numba's simulator, run in a subprocess by ``tests/backends/test_cuda_sim.py``), ``dist``
(the gloo ranks ``tests/distributed/test_distributed.py`` starts) and ``compiler`` (libNVVM for the PTX
codegen tests).
"""
