# NumPy's side of the capsule programs (harness/programs/capsule/upstream/numpy_peer.cc embeds this file
# at build time and runs it in the embedded interpreter). `make_array` builds a NumPy-owned array whose
# logical values are the producer pattern, in the same four layouts as this layer's producer.
import numpy as np
import _lifeline_interop as li

_NP = {"float32": np.float32, "float16": np.float16, "int8": np.int8, "bool": np.bool_}


def make_array(dtype, shape, layout, seed, readonly):
    shape = tuple(shape)
    n = 1
    for d in shape:
        n *= d
    base = np.array(li.expected_values(dtype, n, seed), dtype=_NP[dtype]).reshape(shape)
    if layout == "transposed":
        a = np.ascontiguousarray(base.T).T
    elif layout == "strided" and shape:
        a = np.zeros(shape[:-1] + (shape[-1] * 2,), dtype=_NP[dtype])[..., ::2]
        a[...] = base
    elif layout == "offset":
        a = np.zeros(n + 3, dtype=_NP[dtype])[3:].reshape(shape)
        a[...] = base
    else:
        a = base
    if readonly:
        a.flags.writeable = False
    return a


def values(a):
    return a.reshape(-1).tolist()
