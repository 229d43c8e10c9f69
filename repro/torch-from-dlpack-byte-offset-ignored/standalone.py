# torch-from-dlpack-byte-offset-ignored, without lifeline: PyTorch only (python3 standalone.py).
# A DLPack capsule whose DLTensor has byte_offset != 0 (built here with ctypes against dlpack.h 0.6's ABI):
# torch.from_dlpack reads from `data` and drops `byte_offset`.
# Fails with AssertionError while the bug is there; exits 0 once byte_offset is honoured.
import ctypes

import torch
import torch.utils.dlpack


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]

values = (ctypes.c_float * 4)(0.0, 0.0, 7.0, 8.0)  # the tensor is the last two: data + 8 bytes
shape = (ctypes.c_int64 * 1)(2)
deleted = []
deleter = DELETER(lambda managed: deleted.append(True))
managed = DLManagedTensor(DLTensor(ctypes.cast(values, ctypes.c_void_p), DLDevice(1, 0), 1, DLDataType(2, 32, 1),
                                   shape, None, 8), None, deleter)
ctypes.pythonapi.PyCapsule_New.restype = ctypes.py_object
ctypes.pythonapi.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
capsule = ctypes.pythonapi.PyCapsule_New(ctypes.addressof(managed), b"dltensor", None)

got = torch.utils.dlpack.from_dlpack(capsule).tolist()
assert got == [7.0, 8.0], f"torch.from_dlpack of a tensor at byte_offset 8 reads {got}, the tensor holds [7.0, 8.0]"
