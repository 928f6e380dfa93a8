"""What the product benchmarks in benchmarks/ share, and the few private reads they need, each with its why.

The product benchmarks (benchmarks/*.py) call the public API only: ``rotate``, ``rotate.distributed``,
``waveops``, ``rotate.bench`` and ``rotate.bench_env``; tests/project/test_benchmarks_layout.py checks their import
graph. Where one needs something the package keeps private, it reads it here, never from ``rotate._*``:

* ``provenance``: the environment block every result file records (commit, versions, knobs, load);
* ``timing``: the CUDA timers ``python -m rotate.bench`` times with, so every GPU number is taken alike;
* ``knobs``: GPU tuning overrides for A/B runs (``--set``) and the exact traffic of a lane-walks plan;
* ``ab``: one roll planned, checked and timed under each of several GPU tuning settings (the probes' A/B loop);
* ``cpu_kernel``: the CPU row kernel cpu_bench.py times without the call's dispatch;
* ``std_rotate.cpp``: the C++ reference cpu_bench.py builds.
* ``shapes``: the seeded shapes random_bench.py and soak.py draw (sides log-uniform, snapped to powers
  of two, primes and powers of two plus or minus one); nothing private, only shared.
* ``plots``: the PNG every benchmark draws (``--plot``) and redraws from a result (``--from``); nothing
  private, only shared.

A benchmark run as a script (``python benchmarks/x.py``) has benchmarks/ on ``sys.path`` and imports
``from _harness import provenance``.
"""
