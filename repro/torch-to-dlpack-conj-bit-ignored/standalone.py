# torch-to-dlpack-conj-bit-ignored, without lifeline: PyTorch only (python3 standalone.py).
# Tensor.__dlpack__ refuses a tensor with the conjugate bit; torch.utils.dlpack.to_dlpack exports its memory.
# Fails with AssertionError while the bug is there; exits 0 once to_dlpack refuses or resolves the bit.
import torch
import torch.utils.dlpack

t = torch.tensor([1 + 2j]).conj()  # memory holds 1+2j; the tensor's value is 1-2j
assert t.is_conj() and t.tolist() == [1 - 2j]
try:
    capsule = torch.utils.dlpack.to_dlpack(t)
except (RuntimeError, BufferError):
    raise SystemExit(0)  # refused, as __dlpack__ refuses it
got = torch.utils.dlpack.from_dlpack(capsule).tolist()
assert got == t.tolist(), f"to_dlpack of a conjugate view exports {got}, the tensor holds {t.tolist()}"
