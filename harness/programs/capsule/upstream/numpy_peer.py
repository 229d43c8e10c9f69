# NumPy's side of the capsule programs (harness/programs/capsule/upstream/numpy_peer.cc embeds this file
# at build time and runs it in the embedded interpreter). `make_array` builds a NumPy-owned array whose
# logical values are the producer pattern, in the layouts of this layer's producer that NumPy has (all but
# null-strides: NumPy's exports always carry strides).
import numpy as np
import _lifeline_interop as li

_NP = {"float32": np.float32, "float16": np.float16, "int8": np.int8, "bool": np.bool_, "uint8": np.uint8,
       "complex64": np.complex64, "int16": np.int16, "int32": np.int32, "int64": np.int64, "uint16": np.uint16,
       "uint32": np.uint32, "uint64": np.uint64, "float64": np.float64, "complex128": np.complex128}


def make_array(dtype, shape, layout, seed, readonly):
    shape = tuple(shape)
    n = 1
    for d in shape:
        n *= d
    if layout == "broadcast" and len(shape) >= 1 and shape[0] > 1:
        # One row's memory seen shape[0] times (stride 0 on axis 0), as writable as asked: as_strided, not
        # broadcast_to, whose arrays are always read-only. The rows hold the pattern's first row.
        row = np.array(li.expected_values(dtype, n // shape[0], seed), dtype=_NP[dtype]).reshape(shape[1:])
        return np.lib.stride_tricks.as_strided(row, shape, (0,) + row.strides, writeable=not readonly)
    base = np.array(li.expected_values(dtype, n, seed), dtype=_NP[dtype]).reshape(shape)
    if layout == "transposed":
        a = np.ascontiguousarray(base.T).T
    elif layout == "strided" and shape:
        a = np.zeros(shape[:-1] + (shape[-1] * 2,), dtype=_NP[dtype])[..., ::2]
        a[...] = base
    elif layout == "offset":
        a = np.zeros(n + 3, dtype=_NP[dtype])[3:].reshape(shape)
        a[...] = base
    elif layout == "reversed" and shape:
        a = np.ascontiguousarray(base[..., ::-1])[..., ::-1]  # a negative stride on the last axis
    elif layout == "reversed-all" and shape:
        a = np.flip(np.ascontiguousarray(np.flip(base)))  # a negative stride on every axis
    elif layout == "unit-strides":
        # C order, and the producer's strides for the axes of extent 1, which no element steps by.
        strides = tuple(s * base.itemsize for s in li.strides(shape, layout))
        a = np.lib.stride_tricks.as_strided(base, shape, strides, writeable=True)
    else:
        a = base
    if readonly:
        a.flags.writeable = False
    return a


def values(a):
    return a.reshape(-1).tolist()
