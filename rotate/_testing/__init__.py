"""Tools for the project's own tests (not an API): ``emulator`` runs the GPU schedules' exact index
math (``rotate._schedules``) on the CPU under hostile interleavings of virtual blocks."""
