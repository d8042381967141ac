"""Arrays passed to a kernel as rows of one address table instead of one argument each.

numba unboxes every array argument into a new reference-counted record (a ``malloc`` and a
``free`` per array per call, ~65 ns each with the type dispatch): ~40 arrays cost a recall at
500 rows ~5 µs of ~24 µs in the kernel. A table row ``(address, rows, columns)`` read back with
``numba.carray`` gives a view with no record at all, so neither the boundary nor the calls inside
count references. The caller keeps the arrays alive and checks their dtypes and layout against
what the kernel reads (:func:`view_table`); the kernel trusts them.
"""

import numpy as np
from numba import carray, config, literal_unroll, njit, types
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
        return list(values)

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


@njit(cache=True)
def view_rows(arrays):
    """``(address, rows, columns)`` of every array of the tuple ``arrays`` (columns 0 for a 1-D
    array): NumPy's ``ctypes.data`` alone takes ~1 µs an array."""
    out = np.empty((len(arrays), 3), np.int64)
    i = 0
    for a in literal_unroll(arrays):
        out[i, 0] = a.ctypes.data
        out[i, 1] = a.shape[0]
        out[i, 2] = a.shape[-1] * (a.ndim == 2)
        i += 1  # noqa: SIM113 (numba cannot enumerate over literal_unroll)
    return out


def view_table(args: tuple, kinds: tuple) -> tuple[np.ndarray, object] | None:
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
    >>> views[:, 1:].tolist(), [float(k) for k in knobs]
    ([[3, 0], [2, 4]], [2.0])
    >>> view_table((np.zeros(3, np.float32),), (("f8", 1),)) is None
    True
    """
    if len(args) != len(kinds):
        return None
    array_at, scalar_at, dtypes, ndims = _layout(kinds)
    arrays = [args[i] for i in array_at]
    knobs = [args[i] for i in scalar_at]
    # lists, not generators, inside all() and any(): ~40 % faster at this length
    misfit = [isinstance(k, (np.ndarray, bool)) or float(k) != k for k in knobs]
    if (not all([type(a) is np.ndarray for a in arrays])  # noqa: C419
            or [a.dtype for a in arrays] != dtypes or [a.ndim for a in arrays] != ndims
            or not all([a.flags.c_contiguous for a in arrays])  # noqa: C419
            or any(misfit)):
        return None
    views = view_rows(tuple(arrays)) if arrays else np.zeros((0, 3), np.int64)
    return views, _knob_values([float(k) for k in knobs])


def _layout(kinds: tuple, _cache: dict = {}) -> tuple:  # noqa: B006 (a deliberate memo)
    """(array positions, scalar positions, their dtypes, their dimensions) of ``kinds``."""
    layout = _cache.get(kinds)
    if layout is None:
        array_at = [i for i, kind in enumerate(kinds) if kind != ""]
        layout = _cache[kinds] = (array_at, [i for i, kind in enumerate(kinds) if kind == ""],
                                  [np.dtype(kinds[i][0]) for i in array_at],
                                  [kinds[i][1] for i in array_at])
    return layout

