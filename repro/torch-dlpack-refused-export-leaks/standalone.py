# torch-dlpack-refused-export-leaks, without lifeline: PyTorch only (python3 standalone.py).
# An export torch refuses for its dtype (bool in 1.13) leaks the tensor: at::toDLPack allocates its
# ATenDLMTensor, holding a view of the tensor, before the dtype conversion throws.
# Fails with AssertionError while the bug is there; exits 0 once the refusal frees what it allocated (or bool
# exports, as it does since PyTorch 2.1).
import gc
import weakref

import torch
import torch.utils.dlpack

t = torch.zeros(1000, dtype=torch.bool)
alive = weakref.ref(t)
try:
    torch.utils.dlpack.to_dlpack(t)
    raise SystemExit(0)  # bool exports: nothing refused, nothing to leak
except (RuntimeError, BufferError):
    pass
del t
gc.collect()
assert alive() is None, "a bool tensor whose DLPack export was refused is still alive after every reference is gone"
