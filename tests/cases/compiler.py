"""Whether numba-cuda can compile PTX here: libNVVM and NVRTC (the ``codegen`` extra brings both).

A machine can have one without the other (a system libNVVM, no NVRTC), so the
check compiles a one-line kernel rather than looking for a library. Tests that
read PTX skip when it cannot, except where ``ROTATE_REQUIRE_NVVM=1`` (CI, after
installing the extra): there a missing compiler fails.
"""

from __future__ import annotations

import functools
import os

import pytest

_LIBRARY_WORDS = ("DynamicLibNotFound", "libnvrtc", "libnvvm", "NvvmSupportError", "NVRTC", "nvvm")


@functools.lru_cache(maxsize=1)
def compiler_missing():
    """None when PTX compiles here, else why not."""
    try:
        from numba.core import config

        if config.ENABLE_CUDASIM:
            return "the CUDA simulator cannot compile PTX"
        import numba.cuda.dispatcher as dispatcher
        from numba import cuda, types
    except ImportError as exc:
        return f"numba-cuda is not installed ({exc})"

    class _Device:  # compile for the H200's compute capability without a GPU
        compute_capability = (9, 0)
        id = 0

    def probe(x):
        x[0] = 1

    saved = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: _Device()
    try:
        cuda.compile_ptx(probe, (types.int32[::1],), cc=(9, 0))
    except Exception as exc:  # noqa: BLE001 - classified below; anything else is re-raised
        text = f"{type(exc).__name__}: {exc}"
        if any(word in text for word in _LIBRARY_WORDS):
            return text
        raise
    finally:
        dispatcher.get_current_device = saved
    return None


def require_compiler(module_level: bool = True) -> None:
    """Skip (or, under ROTATE_REQUIRE_NVVM=1, fail) when PTX cannot be compiled here."""
    reason = compiler_missing()
    if reason is None:
        return
    if os.environ.get("ROTATE_REQUIRE_NVVM") == "1" and "simulator" not in reason:
        raise RuntimeError(f"ROTATE_REQUIRE_NVVM=1 but PTX does not compile here: {reason}; "
                           f"pip install -e '.[codegen]'")
    pytest.skip(f"PTX does not compile here ({reason}); pip install -e '.[codegen]'",
                allow_module_level=module_level)
