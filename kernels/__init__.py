"""numba kernels of maclaw_fast, installed as ``maclaw_kernels``.

Plain functions over arrays and scalars: no objects, no globals, every knob an argument,
``cache=True``, and ``no_cfunc_wrapper=True`` (no kernel is a C callback; numba would
otherwise build and optimise a C wrapper for each, compile time on a fresh install). A kernel
that only other kernels call also has no CPython entry point (``no_cpython_wrapper=True``,
~30 ms less compile each); tests and profiling call it through :func:`entry`. Kernels are
``nogil=True`` and ``error_model="numpy"`` (a zero divisor gives inf or NaN, not an exception;
no kernel divides by zero) but the few with ``fastmath``: numba compiles the NumPy and builtin
functions a kernel uses once per set of options, so a shared set compiles them once, not once
per kind of kernel (~0.7 s less on a fresh install). This package
depends only on numpy and numba and never imports ``maclaw_fast``. Each kernel is compared with
a plain reference on random inputs in ``tests/test_*kernels.py``.

numba's on-disk cache checks only the source file of the function it compiled, so a caller
would keep running the old machine code of a changed callee in another file. The locators
registered below stamp every kernel with all of this package's sources instead: any change
here recompiles every kernel once.
"""

import hashlib
from pathlib import Path

_HERE = Path(__file__).resolve().parent


def _package_stamp() -> str:
    digest = hashlib.sha256()
    for path in sorted(_HERE.glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _register_locators() -> None:
    try:
        from numba.core import caching
    except ImportError:  # an older numba lays its cache out differently: its own rule applies
        return
    stamp = _package_stamp()

    def ours(base):
        class PackageStamped(base):
            def get_source_stamp(self):
                return stamp

            @classmethod
            def from_function(cls, py_func, py_file):
                if Path(py_file).resolve().parent != _HERE:
                    return None
                return super().from_function(py_func, py_file)

        PackageStamped.__name__ = f"Kernels{base.__name__}"
        return PackageStamped

    names = ("UserProvidedCacheLocator", "InTreeCacheLocator", "UserWideCacheLocator")
    bases = [getattr(caching, n, None) for n in names]
    impl = getattr(caching, "CacheImpl", None)
    if impl is None or None in bases or not hasattr(impl, "_locator_classes"):
        return
    impl._locator_classes[:0] = [ours(b) for b in bases]


_register_locators()


def entry(kernel):
    """``kernel`` callable from Python: for a kernel without a CPython entry point, a copy
    compiled with one, uncached (numba's cache keys a function by its source, so it would hand
    back the compiled code without the entry point). A plain function, under
    ``NUMBA_DISABLE_JIT=1``, comes back as it is."""
    py_func = getattr(kernel, "py_func", None)
    if py_func is None or not kernel.targetoptions.get("no_cpython_wrapper"):
        return kernel
    from numba import njit

    options = {k: v for k, v in kernel.targetoptions.items()
               if k not in ("no_cpython_wrapper", "nopython")}
    return njit(**options)(py_func)  # the kernel's own options (fastmath, error model)
