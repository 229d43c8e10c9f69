# torch-from-dlpack-empty-leaks, without lifeline: PyTorch only (python3 standalone.py).
# torch.from_dlpack of an export whose data pointer is NULL never calls its deleter; torch exports every tensor
# without elements with data NULL, so importing torch's own empty tensor leaks it and its storage.
# Fails with AssertionError on PyTorch 1.13; fixed upstream by pytorch/pytorch#117418.
import gc
import weakref

import torch
import torch.utils.dlpack

t = torch.zeros(0)
alive = weakref.ref(t)
imported = torch.utils.dlpack.from_dlpack(t)
del t, imported
gc.collect()
assert alive() is None, "an empty tensor imported with torch.from_dlpack is still alive after every reference is gone"
