"""The values the torch exporter (torch_py.py) writes and checks, as this layer's producer makes them
(layers/interop/dlpack_types.cc): the dtypes (DTYPES: their torch, NumPy, struct and DLPack names), the layouts,
the producer's pattern (PatternValue) and placement (PlaceTensor), and those values as Python source (literals,
nested lists as tolist() gives them)."""
from __future__ import annotations

import json


# dtype -> torch name, numpy name (None: NumPy makes none), struct format, DLPack (code, bits), item size.
DTYPES = {
    "float32": ("torch.float32", "np.float32", "f", (2, 32), 4),
    "float16": ("torch.float16", "np.float16", "e", (2, 16), 2),
    "int8": ("torch.int8", "np.int8", "b", (0, 8), 1),
    "bool": ("torch.bool", "np.bool_", "?", (6, 8), 1),  # code 6: DLPack >= 0.8 kDLBool, as the producer uses
    "uint8": ("torch.uint8", "np.uint8", "B", (1, 8), 1),
    "bfloat16": ("torch.bfloat16", None, None, (4, 16), 2),
    "complex64": ("torch.complex64", "np.complex64", None, (5, 64), 8),
    "int16": ("torch.int16", "np.int16", "h", (0, 16), 2),
    "int32": ("torch.int32", "np.int32", "i", (0, 32), 4),
    "int64": ("torch.int64", "np.int64", "q", (0, 64), 8),
    "uint16": (None, "np.uint16", "H", (1, 16), 2),  # PyTorch 1.13 has no uint16, uint32, uint64
    "uint32": (None, "np.uint32", "I", (1, 32), 4),
    "uint64": (None, "np.uint64", "Q", (1, 64), 8),
    "float64": ("torch.float64", "np.float64", "d", (2, 64), 8),
    "complex128": ("torch.complex128", "np.complex128", None, (5, 128), 16),
}
COMPLEX = ("complex64", "complex128")
FLOATING = ("float32", "float16", "bfloat16", "float64") + COMPLEX
# The complex dtype whose imaginary part is a `dtype` tensor: the public route to a negated view.
NEG_VIA_COMPLEX = {"float32": ("torch.complex64", 8), "float16": ("torch.complex32", 4)}
OFFSET_ELEMENTS = 3  # layers/interop/dlpack_types.h kOffsetElements
UNIT_STRIDE = 4099  # layers/interop/dlpack_types.h kUnitStride
LAYOUTS = ("contiguous", "transposed", "strided", "offset", "reversed", "broadcast", "null-strides", "reversed-all",
           "unit-strides")


# ---- the producer pattern and placement (layers/interop) -------------------------------------------------

def pattern(dtype: str, seed: int, i: int):
    """PatternValue (+ PatternImag for complex64): element i of what a producer filled with `seed` holds."""
    k = (seed * 31 + i * 7) % 97
    if dtype in ("float32", "float16", "bfloat16", "float64"):
        return (k - 48) * 0.5
    if dtype in COMPLEX:
        return complex((k - 48) * 0.5, ((seed * 17 + i * 11 + 5) % 89 - 44) * 0.25)
    if dtype in ("int8", "int16", "int32", "int64"):
        return k - 48
    if dtype == "bool":
        return k % 3 == 0
    return k  # uint8 to uint64


def numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def place(shape, layout: str):
    """PlaceTensor: (element strides, element offset, storage elements) of this layer's producer."""
    ndim, strides, stride = len(shape), [0] * len(shape), 1
    if layout == "transposed":
        for i in range(ndim):
            strides[i], stride = stride, stride * shape[i]
    else:
        widen = 2 if layout == "strided" else 1
        for i in reversed(range(ndim)):
            if i == 0 and layout == "broadcast":  # axis 0 takes no memory: one row, seen shape[0] times
                break
            if layout == "unit-strides" and shape[i] == 1:  # an axis of extent 1: its stride steps by nothing
                strides[i] = 0 if i % 2 == 0 else UNIT_STRIDE
                continue
            last = widen if i == ndim - 1 else 1
            strides[i], stride = stride * last, stride * shape[i] * last
    offset = OFFSET_ELEMENTS if layout == "offset" else 0
    if layout == "reversed" and ndim:  # each row's element 0 is the last of its memory
        strides[-1] = -1
        return strides, max(shape[-1] - 1, 0), numel(shape)
    if layout == "reversed-all":  # the C-order strides negated: logical element 0 is the storage's last
        return [-st for st in strides], max(numel(shape) - 1, 0), numel(shape)
    return strides, offset, (0 if numel(shape) == 0 else offset + stride)


def period(shape, layout: str) -> int:
    """PatternPeriod: the elements of one row of a broadcast (its rows are one memory, so element i holds pattern
    element i modulo this), or 0."""
    return numel(shape) // shape[0] if layout == "broadcast" and len(shape) >= 1 and shape[0] > 1 else 0


def pattern_at(dtype: str, seed: int, every: int, i: int):
    """The pattern element logical element i holds, for a period as period() gives it."""
    return pattern(dtype, seed, i % every if every else i)


def element_offset(shape, strides, offset: int, index: int) -> int:
    for i in reversed(range(len(shape))):
        offset += (index % shape[i]) * strides[i]
        index //= shape[i]
    return offset


def q(text: str) -> str:
    """A double-quoted Python string literal."""
    return json.dumps(text, ensure_ascii=False)


def literal(v) -> str:
    """Python source of a value as tolist() gives it (floats, ints, bools, complex numbers, nested lists)."""
    if isinstance(v, list):
        return "[" + ", ".join(literal(e) for e in v) + "]"
    return repr(v)


def nest(flat: list, shape):
    """C-order elements as tolist() gives them: a scalar for 0-d."""
    if not shape:
        return flat[0]
    if len(shape) == 1:
        return list(flat)
    step = numel(shape[1:])
    return [nest(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def torch_storage_elements(shape, strides) -> int:
    """What torch.empty_strided allocates."""
    return 0 if numel(shape) == 0 else 1 + sum((s - 1) * st for s, st in zip(shape, strides))
