# torch-dlpack-neg-bit-ignored, without lifeline: PyTorch and NumPy only (python3 standalone.py).
# A lazily negated tensor exports its memory over DLPack: the consumer reads the negatives.
# Fails with AssertionError while the bug is there; exits 0 once __dlpack__ resolves or refuses the bit.
import numpy as np
import torch

t = torch._neg_view(torch.tensor([1.0, 2.0]))  # memory holds 1, 2; the tensor's values are -1, -2
assert t.is_neg() and t.tolist() == [-1.0, -2.0]
try:
    got = np.from_dlpack(t).tolist()  # Tensor.__dlpack__ -> torch.to_dlpack -> at::toDLPack
except (RuntimeError, BufferError):
    raise SystemExit(0)  # refused: allowed by the protocol
assert got == t.tolist(), f"numpy.from_dlpack of a negated view reads {got}, the tensor holds {t.tolist()}"
