"""Arrays passed to a kernel as rows of one address table instead of one argument each.

numba unboxes every array argument into a new reference-counted record (a ``malloc`` and a
``free`` per array per call, ~65 ns each with the type dispatch): ~40 arrays cost a recall at
500 rows ~5 µs of ~24 µs in the kernel. A table row ``(address, rows, columns)`` read back with
``numba.carray`` gives a view with no record at all, so neither the boundary nor the calls inside
count references. The caller keeps the arrays alive and checks their dtypes and layout against
what the kernel reads (:func:`view_table`); the kernel trusts them.
"""

import numpy as np
from numba import carray, config, njit, types
from numba.extending import intrinsic

if config.DISABLE_JIT:  # the pure-Python lane: views made by NumPy from the addresses

    def column(table, i, dtype):
        """Row ``i`` of ``table`` as a 1-D C-contiguous array of ``dtype``."""
        return _python_view(table, i, dtype, (int(table[i, 1]),))

    def block(table, i, dtype):
        """Row ``i`` of ``table`` as a 2-D C-contiguous array of ``dtype``."""
        return _python_view(table, i, dtype, (int(table[i, 1]), int(table[i, 2])))

    def _knob_values(values):
        # Python floats, as the array path passes them: NumPy float64 scalars would turn
        # float32 arithmetic that NumPy keeps in float32 for a Python float into float64
        return values

    def _python_view(table, i, dtype, shape):
        dtype = np.dtype(dtype)
        if int(np.prod(shape)) == 0:
            return np.empty(shape, dtype)
        return np.asarray(_Interface({"data": (int(table[i, 0]), False), "shape": shape,
                                      "typestr": dtype.str, "version": 3}))

    class _Interface:
        """Memory described by NumPy's array interface (an address, a shape, a dtype)."""

        def __init__(self, interface):
            self.__array_interface__ = interface

else:

    @intrinsic
    def address_to_pointer(typingctx, address, dtype):
        """The integer ``address`` as a pointer to ``dtype`` (a NumPy scalar type)."""
        signature = types.CPointer(dtype.dtype)(address, dtype)

        def codegen(context, builder, sig, args):
            return builder.inttoptr(args[0], context.get_value_type(sig.return_type))

        return signature, codegen

    def _knob_values(values):
        return np.array(values, np.float64)

    @njit(cache=True, inline="always")
    def column(table, i, dtype):
        """Row ``i`` of ``table`` as a 1-D C-contiguous array of ``dtype``."""
        return carray(address_to_pointer(table[i, 0], dtype), (table[i, 1],))

    @njit(cache=True, inline="always")
    def block(table, i, dtype):
        """Row ``i`` of ``table`` as a 2-D C-contiguous array of ``dtype``."""
        return carray(address_to_pointer(table[i, 0], dtype), (table[i, 1], table[i, 2]))


def view_table(args: tuple, kinds: tuple) -> tuple[np.ndarray, np.ndarray] | None:
    """``(views, knobs)`` for a kernel that reads its arrays through an address table
    (:func:`column`, :func:`block`): one ``(address, rows, columns)`` row per array of ``args`` and
    every scalar as float64, in order. ``kinds`` names what the kernel reads at each position:
    ``(dtype, ndim)`` for an array, ``""`` for a scalar. None when any array is not of that dtype,
    dimension and C-contiguous layout, or any scalar is not an exact float64 (the caller then
    passes the arrays as they are): the kernel would misread them. The caller keeps ``args``
    alive while the table is in use.

    Examples
    --------
    >>> views, knobs = view_table((np.zeros(3), 2, np.ones((2, 4), np.int32)),
    ...                           (("f8", 1), "", ("i4", 2)))
    >>> views[:, 1:].tolist(), knobs.tolist()
    ([[3, 0], [2, 4]], [2.0])
    >>> view_table((np.zeros(3, np.float32),), (("f8", 1),)) is None
    True
    """
    if len(args) != len(kinds):
        return None
    rows, knobs = [], []
    for value, kind in zip(args, kinds):
        if kind == "":
            if isinstance(value, (np.ndarray, bool)) or float(value) != value:
                return None
            knobs.append(float(value))
            continue
        dtype, ndim = kind
        if (type(value) is not np.ndarray or value.dtype != np.dtype(dtype)
                or value.ndim != ndim or not value.flags.c_contiguous):
            return None
        rows.append((value.ctypes.data, value.shape[0], value.shape[1] if ndim == 2 else 0))
    return np.array(rows, np.int64).reshape(-1, 3), _knob_values(knobs)
