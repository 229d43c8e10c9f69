# PyTorch's side of the capsule programs (harness/programs/capsule/upstream/torch_peer.cc embeds this file at
# build time and runs it once per process in the embedded interpreter). `make_tensor` builds a torch-owned
# tensor whose logical values are the producer pattern, in the producer's layouts that torch has (not
# reversed or reversed-all: torch has no negative strides; not null-strides: its exports always carry strides),
# and one of four flavors: plain, a lazily conjugated view (memory holds the conjugates), a lazily negated view
# (torch._neg_view: memory holds the negatives), or a tensor that requires grad.
import os

# One thread everywhere, before torch loads OpenMP and before any op: runs are the same on any machine.
os.environ["OMP_NUM_THREADS"] = "1"
import torch  # noqa: E402
import torch.utils.dlpack  # noqa: E402
import _lifeline_interop as li  # noqa: E402

torch.set_num_threads(1)
torch.set_num_interop_threads(1)

_T = {"float32": torch.float32, "float16": torch.float16, "int8": torch.int8, "bool": torch.bool,
      "uint8": torch.uint8, "bfloat16": torch.bfloat16, "complex64": torch.complex64, "int16": torch.int16,
      "int32": torch.int32, "int64": torch.int64, "float64": torch.float64, "complex128": torch.complex128}


def _reversed_axes(t):
    return t.permute(tuple(reversed(range(t.dim()))))


def make_tensor(dtype, shape, layout, seed, flavor):
    shape = tuple(shape)
    n = 1
    for d in shape:
        n *= d
    values = li.expected_values(dtype, n, seed)
    if flavor == "conj":
        values = [v.conjugate() for v in values]
    elif flavor == "neg":
        values = [-v for v in values]
    base = torch.tensor(values, dtype=_T[dtype]).reshape(shape)
    if layout == "broadcast" and len(shape) >= 1 and shape[0] > 1:
        # One row seen shape[0] times (stride 0 on axis 0); the rows hold the pattern's first row.
        base = base[:1].expand(shape)
    if layout == "transposed":
        t = _reversed_axes(_reversed_axes(base).contiguous())
    elif layout == "strided" and shape:
        t = torch.zeros(shape[:-1] + (shape[-1] * 2,), dtype=_T[dtype])[..., ::2]
        t.copy_(base)
    elif layout == "offset":
        t = torch.zeros(n + 3, dtype=_T[dtype])[3:].reshape(shape)
        t.copy_(base)
    elif layout == "unit-strides":
        # C order, and the producer's strides for the axes of extent 1, which no element steps by.
        t = torch.empty_strided(shape, li.strides(shape, layout), dtype=_T[dtype])
        t.copy_(base)
    else:
        t = base
    # A root tensor (no autograd base) over the same storage, offset and strides: an export's view of it
    # (toDLPack's as_strided) then keeps this very object alive, as the lifetime model says an export
    # keeps the tensor it came from. A view of a view would keep only the hidden root alive.
    t = torch.empty(0, dtype=_T[dtype]).set_(t.storage(), t.storage_offset(), t.size(), t.stride())
    if flavor == "conj":
        torch._C._set_conj(t, True)
    elif flavor == "neg":
        torch._C._set_neg(t, True)
    elif flavor == "requires-grad":
        t.requires_grad_(True)
    return t


def values(t):
    return t.detach().reshape(-1).tolist()


to_dlpack = torch.utils.dlpack.to_dlpack

# torch.from_dlpack is torch.utils.dlpack.from_dlpack in 1.13: it takes an object with __dlpack__ or a
# bare capsule.
from_dlpack = torch.utils.dlpack.from_dlpack
