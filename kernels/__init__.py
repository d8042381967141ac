"""numba kernels of maclaw_fast, installed as ``maclaw_kernels``.

Plain functions over arrays and scalars: no objects, no globals, every knob an argument,
``cache=True``, serial by default with ``*_batch`` variants over ``prange``. This package depends
only on numpy and numba and never imports ``maclaw_fast``. Each kernel is compared with a plain
reference on random inputs in ``tests/test_*kernels.py``.
"""
