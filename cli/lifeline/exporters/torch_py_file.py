"""The Python file the torch exporter (torch_py.py) writes around the program's steps: the header comment (the
finding, how to run the file, how it fails), the imports it needs, the ctypes producer (this layer's DLPack
producer rebuilt on dlpack.h 0.6's ABI, with only the parts the program uses), Holder (a bare capsule handed to
NumPy), expect() (expected vs actual, then assert), and the versions, contract and expected printed first. The
PyFile mixin's assemble() reads what the Writer gathered: `body`, `uses`, `leak`, `aborts`."""
from __future__ import annotations

from .torch_py_values import q


class PyFile:
    """The Writer's assemble(): the whole file, from what it gathered (see the module docstring)."""


    def assemble(self) -> str:
        f, r = self.finding, self.report
        title = r.get("title") or f.get("title", "")
        run = f"python3 {f['input']}.py" if f.get("input") else "python3 <this file>"
        lines = [f"# {f.get('id', 'finding')}{' (' + f['input'] + ')' if f.get('input') else ''}, written by "
                 f"`lifeline export`: PyTorch and NumPy only, no lifeline code.",
                 f"# {title}",
                 f"# Run: {run}. " + ("Aborts (std::terminate) while the bug is there" if self.aborts else
                                       "Fails with AssertionError (expected vs actual) while the bug is there")
                 + "; exits 0 once it is fixed."]
        stdlib = [f"import {m}" for m in ("ctypes", "gc", "struct", "sys", "weakref") if self.needs(m)]
        numpy = "numpy" in self.uses or "holder" in self.uses
        lines += stdlib + ([""] if stdlib else []) + (["import numpy as np"] if numpy else []) + ["import torch"]
        if "torch.utils.dlpack" in self.uses:
            lines.append("import torch.utils.dlpack")
        blocks = []
        if "producer" in self.uses:
            blocks.append(self.producer_source())
        if "holder" in self.uses:
            blocks.append(["class Holder:  # NumPy 1.24's from_dlpack takes an object with __dlpack__, "
                           "not a bare capsule",
                           "    def __init__(self, capsule):",
                           "        self.capsule = capsule", "",
                           "    def __dlpack__(self, stream=None):",
                           "        return self.capsule", "",
                           "    def __dlpack_device__(self):",
                           "        return (1, 0)"])
        if "expect" in self.uses:
            blocks.append(["def expect(what, want, got):",
                           '    print(f"{what}: expected {want}, got {got}")',
                           '    assert got == want, f"{what}: expected {want}, got {got}"'])
        for block in blocks:
            lines += ["", ""] + block
        lines += ["", "", 'print("torch", torch.__version__' + (', "numpy", np.__version__)' if numpy else ")")]
        contract = r.get("contract") or f.get("contract")
        for key, text in (("contract", contract), ("expected", r.get("expected"))):
            if text:
                lines.append(f"print({q(key + ':')}, {q(text)})")
        return "\n".join(lines + self.body) + "\n"

    def needs(self, module: str) -> bool:
        if module == "ctypes":
            return "producer" in self.uses
        if module == "struct":
            return "struct" in self.uses or any("struct.pack(" in line for line in self.body)
        return module in self.uses

    def producer_source(self) -> list:
        """The ctypes producer: only the parts this program uses."""
        # With the leak check, capsules get DLPack's destructor (an unconsumed capsule releases its export), and the
        # producer keeps every capsule it hands out until the teardown drops them: a consumer that refuses one drops
        # it with its exception pending, when no Python code (the destructor is a ctypes callback) can run safely.
        leak, malformed, parked = self.leak, "malformed" in self.uses, "parked" in self.uses
        name = "name" if malformed else 'b"dltensor"'
        src = [
            "class DLManagedTensor(ctypes.Structure):  # dlpack.h 0.6: DLTensor (DLDevice, DLDataType inlined), "
            "manager_ctx, deleter",
            '    _fields_ = [("data", ctypes.c_void_p), ("device", ctypes.c_int32 * 2), ("ndim", ctypes.c_int32),',
            '                ("dtype", ctypes.c_uint8 * 2), ("lanes", ctypes.c_uint16), ("shape", ctypes.c_void_p),',
            '                ("strides", ctypes.c_void_p), ("byte_offset", ctypes.c_uint64), ("manager_ctx", ctypes.c_void_p),',
            '                ("deleter", ctypes.c_void_p)]',
            "",
            "",
            "class Producer:  # on the CPU; each __dlpack__() is a DLManagedTensor over `storage` (strides in elements)",
            "    live = {}  # the address of each export whose deleter has not run -> what it holds",
        ]
        if parked:
            src.append("    parked = {}  # NULL-deleter exports: the producer keeps them until it releases them itself")
        if leak:
            src.append("    capsules = []  # every capsule handed out, until the teardown drops them")
        src += ["",
                "    def __init__(self, storage, dtype, shape, strides, byte_offset):",
                "        self.storage = ctypes.create_string_buffer(storage, len(storage) or 1)",
                "        self.dtype, self.shape, self.strides, self.byte_offset = dtype, shape, strides, byte_offset",
                "",
                "    def __dlpack_device__(self):",
                "        return (1, 0)  # kDLCPU",
                "",
                ('    def __dlpack__(self, stream=None, name=b"dltensor", device=1, dtype=None, deleter=True, '
                 'lanes=1):' if malformed
                 else "    def __dlpack__(self, stream=None):"),
                "        n = len(self.shape)",
                "        shape, strides = (ctypes.c_int64 * n)(*self.shape), (ctypes.c_int64 * n)(*self.strides)"]
        null_strides = "null-strides" in self.uses  # a producer made with strides=None exports DLTensor.strides NULL
        if null_strides:
            src[-1] = src[-1].replace("(*self.strides)", "(*(self.strides or ()))")
            src.append("        pointer = ctypes.addressof(strides) if self.strides is not None else None")
        made = len(src)
        if malformed:
            src += ["        dtype = dtype or (self.dtype[0], self.dtype[1] // lanes)  # lanes 2: the same bytes",
                    "        m = DLManagedTensor(ctypes.addressof(self.storage), (device, 0), n, dtype, lanes,",
                    "                            ctypes.addressof(shape), ctypes.addressof(strides), self.byte_offset, None,",
                    "                            DELETER if deleter else None)"]
        else:
            src += ["        m = DLManagedTensor(ctypes.addressof(self.storage), (1, 0), n, self.dtype, 1, ctypes.addressof(shape),",
                    "                            ctypes.addressof(strides), self.byte_offset, None, DELETER)"]
        if null_strides:
            src[made:] = [line.replace("ctypes.addressof(strides)", "pointer") for line in src[made:]]
        held = "Producer.live" if not parked else "(Producer.live if deleter else Producer.parked)"
        src.append(f"        {held}[ctypes.addressof(m)] = (m, shape, strides, self, {name})")
        create = f"api.PyCapsule_New(ctypes.addressof(m), {name}, {'DESTRUCTOR' if leak else 'None'})"
        if leak:
            src += [f"        Producer.capsules.append({create})", "        return Producer.capsules[-1]"]
        else:
            src.append(f"        return {create}")
        src += ["",
                "",
                "api = ctypes.pythonapi",
                "api.PyCapsule_New.restype, api.PyCapsule_New.argtypes = ctypes.py_object, [ctypes.c_void_p, "
                "ctypes.c_char_p, ctypes.c_void_p]",
                "delete = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda address, live=Producer.live: live.pop(address))  "
                "# the deleter",
                "DELETER = ctypes.cast(delete, ctypes.c_void_p).value"]
        if leak:
            src += ["api.PyCapsule_GetName.restype, api.PyCapsule_GetName.argtypes = ctypes.c_char_p, [ctypes.c_void_p]",
                    "api.PyCapsule_GetPointer.restype, api.PyCapsule_GetPointer.argtypes = ctypes.c_void_p, "
                    "[ctypes.c_void_p, ctypes.c_char_p]",
                    "",
                    "",
                    "@ctypes.CFUNCTYPE(None, ctypes.c_void_p)",
                    "def destructor(capsule, api=api, live=Producer.live):",
                    '    """DLPack: a capsule still under the name it was made with was never consumed: release its export."""',
                    "    name = api.PyCapsule_GetName(capsule)",
                    "    address = api.PyCapsule_GetPointer(capsule, name)",
                    "    if address in live and live[address][-1] == name:",
                    "        live.pop(address)",
                    "",
                    "",
                    "DESTRUCTOR = ctypes.cast(destructor, ctypes.c_void_p).value"]
        return src
