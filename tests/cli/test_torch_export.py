"""The PyTorch exporter (cli/lifeline/exporters/torch_py.py): capsule programs written as standalone Python on
torch's and NumPy's public API. Generation is checked on small hand-written programs, one per op kind it writes,
and on the ops it must refuse; where `import torch` works, generated files are run: the five findings' reduced
programs fail with their AssertionError on the pinned torch, and programs without a finding exit 0 (so every
check a file makes, leak checks included, can pass as well as fail)."""
import json
import re
import subprocess
import tempfile
import unittest
from pathlib import Path

from lifeline.exporters import torch_py
from support import PY, ROOT

FINDING = {"id": "some-finding", "title": "what happens", "report": {"contract": "the contract, quoted",
                                                                      "expected": "what should happen"}}
LEAK = dict(FINDING, report=dict(FINDING["report"], check="leak"))


def program(*ops, peers=("numpy", "torch")):
    return {"format": "capsule", "peers": list(peers), "ops": [dict(op, id=i) for i, op in enumerate(ops)]}


def torch_array(dtype="float32", shape=(), layout="contiguous", seed=0, flavor="plain"):
    return {"op": "create-array", "peer": "torch", "dtype": dtype, "shape": list(shape), "layout": layout,
            "seed": seed, "readonly": False, "flavor": flavor}


def numpy_array(dtype="float32", shape=(), layout="contiguous", seed=0, readonly=False):
    return {"op": "create-array", "peer": "numpy", "dtype": dtype, "shape": list(shape), "layout": layout,
            "seed": seed, "readonly": readonly, "flavor": "plain"}


def tensor(dtype="float32", shape=(), layout="contiguous", seed=0):
    return {"op": "create-tensor", "dtype": dtype, "shape": list(shape), "layout": layout, "seed": seed,
            "readonly": False}


def raises(op, error="RuntimeError"):
    return dict(op, model={"raises": error})


# The five findings' reduced programs (`lifeline reduce repro/<id>/<input> --bug <id> --only-lane`, decoded with
# the guard off), as the pinned test runs them.
REDUCED = {
    "torch-dlpack-neg-bit-ignored": program(
        torch_array(flavor="neg"), {"op": "peer-from-array", "peer": "numpy", "src": "#0"}),
    "torch-to-dlpack-conj-bit-ignored": program(
        torch_array("complex64", flavor="conj"), raises({"op": "export-array", "src": "#0", "via": "to_dlpack"})),
    "torch-from-dlpack-byte-offset-ignored": program(
        tensor(layout="offset"), {"op": "peer-from-tensor", "peer": "torch", "src": "#0"}),
    "torch-dlpack-refused-export-leaks": program(
        torch_array("bool"), raises({"op": "peer-from-array", "peer": "numpy", "src": "#0"})),
    "torch-from-dlpack-empty-leaks": program(
        torch_array(shape=(0,)), {"op": "peer-from-array", "peer": "torch", "src": "#0"}),
    "torch-from-dlpack-negative-strides-abort": program(
        numpy_array(shape=(2,), layout="reversed"), {"op": "peer-from-array", "peer": "torch", "src": "#0"}),
}
# The findings whose file aborts (an exception out of a noexcept function of torch) instead of asserting.
ABORTS = {
    "torch-from-dlpack-negative-strides-abort": "Storage size calculation overflowed with sizes=[2] and strides=[-1]",
}


def finding(bug_id: str) -> dict:
    doc = json.loads((ROOT / "repro" / bug_id / "bug.json").read_text())
    return {"id": doc["id"], "title": doc["title"], "report": doc.get("report") or {}, "status": doc.get("status")}


def code_lines(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.strip() and not line.strip().startswith("#"))


class Generate(unittest.TestCase):
    """What the text of a generated file says, op by op."""

    def gen(self, *ops, finding=FINDING, **kw):
        src = torch_py.generate(program(*ops, **kw), finding)
        compile(src, "<generated>", "exec")
        return src

    def test_header_contract_and_no_private_api(self):
        src = self.gen(torch_array(), {"op": "read", "src": "#0"})
        lines = src.splitlines()
        self.assertTrue(all(line.startswith("# ") for line in lines[:3]))
        self.assertIn("some-finding", lines[0])
        self.assertIn("what happens", lines[1])
        self.assertIn("python3", lines[2])
        self.assertIn('print("contract:", "the contract, quoted")', src)
        self.assertIn('print("expected:", "what should happen")', src)
        self.assertNotIn("_neg_view", src)
        self.assertNotIn("torch._C", src)
        self.assertNotIn("lifeline_interop", src)

    def test_conj_and_neg_programs_compile(self):
        for prog in (REDUCED["torch-dlpack-neg-bit-ignored"], REDUCED["torch-to-dlpack-conj-bit-ignored"],
                     program(torch_array("float16", (2, 2), "transposed", 3, "neg"),
                             torch_array("complex64", (3,), "offset", 9, "conj"),
                             {"op": "export-array", "src": "#0", "via": "__dlpack__"},
                             raises({"op": "export-array", "src": "#1", "via": "__dlpack__"}),
                             {"op": "peer-from-capsule", "peer": "torch", "src": "#2"},
                             {"op": "read", "src": "#1"}, {"op": "drop", "src": "#0"})):
            for f in (FINDING, LEAK):
                compile(torch_py.generate(prog, f), "<generated>", "exec")

    def test_generation_is_deterministic(self):
        ops = (torch_array("complex64", (2, 3), "transposed", 7, "conj"), {"op": "read", "src": "#0"})
        self.assertEqual(self.gen(*ops), self.gen(*ops))

    def test_report_title_and_input_name_go_in_the_header(self):
        f = dict(FINDING, input="neg-view", report=dict(FINDING["report"], title="in upstream's words"))
        lines = torch_py.generate(program(torch_array()), f).splitlines()
        self.assertIn("in upstream's words", lines[1])
        self.assertIn("python3 neg-view.py", lines[2])

    def test_objects_are_named_by_role_never_by_harness_slot(self):
        src = self.gen(torch_array(), numpy_array(), tensor(), {"op": "export-array", "src": "#0"},
                       {"op": "peer-from-array", "peer": "numpy", "src": "#0"},
                       {"op": "peer-from-tensor", "peer": "torch", "src": "#2"}, torch_array(flavor="neg"),
                       torch_array("complex64", flavor="conj"), torch_array(flavor="requires-grad"))
        for name in ("x", "a", "producer", "capsule", "arr", "y", "x_neg", "x_conj", "x_grad"):
            self.assertRegex(src, rf"(?m)^ *{name} = ")
        self.assertIsNone(re.search(r"\b[tacvb]\d\b", src), "a harness slot name (a0, c1, ...) leaked into the file")

    def test_read_compares_with_the_producer_pattern(self):
        # PatternValue(float32, seed 0, i) = ((0 * 31 + i * 7) % 97 - 48) * 0.5: -24, -20.5, -17, ...
        src = self.gen(torch_array(shape=(3,)), {"op": "read", "src": "#0"})
        self.assertIn("x = torch.tensor([-24.0, -20.5, -17.0], dtype=torch.float32)", src)
        self.assertIn('expect("x", [-24.0, -20.5, -17.0], x.tolist())', src)
        self.assertIn("assert got == want", src)

    def test_complex_pattern_has_an_imaginary_part(self):
        src = self.gen(torch_array("complex64"), {"op": "read", "src": "#0"})
        self.assertIn("(-24-9.75j)", src)

    def test_torch_layouts_are_root_tensors(self):
        src = self.gen(torch_array(shape=(2, 3), layout="transposed"), torch_array(shape=(2,), layout="strided"),
                       torch_array(shape=(), layout="offset"), torch_array(shape=(2, 0)))
        self.assertIn("x = torch.empty_strided((2, 3), (1, 2), dtype=torch.float32).copy_(", src)
        self.assertIn("x2 = torch.empty_strided((2,), (2,), dtype=torch.float32).copy_(", src)
        self.assertIn("x3 = torch.empty(0, dtype=torch.float32).set_(torch.zeros(4, dtype=torch.float32).storage(), "
                      "3, ())", src)
        self.assertIn("x4 = torch.zeros((2, 0), dtype=torch.float32)", src)

    def test_numpy_layouts_and_read_only(self):
        src = self.gen(numpy_array(shape=(2, 2), layout="transposed"), numpy_array(shape=(2,), layout="strided"),
                       numpy_array(layout="offset", readonly=True))
        self.assertIn('a = np.array([[-24.0, -20.5], [-17.0, -13.5]], dtype=np.float32, order="F")', src)
        self.assertIn("a2 = np.zeros((4,), dtype=np.float32)[..., ::2]", src)
        self.assertIn("a3 = np.zeros(4, dtype=np.float32)[3:].reshape(())", src)
        self.assertIn("a3.flags.writeable = False", src)
        self.assertIn("import numpy as np", src)

    def test_conj_flavor_is_a_conj_view_checked_at_setup(self):
        src = self.gen(torch_array("complex64", flavor="conj"))
        self.assertIn("x_conj = torch.tensor((-24+9.75j), dtype=torch.complex64).conj()", src)
        self.assertIn("if not x_conj.is_conj():", src)

    def test_neg_flavor_takes_the_public_route(self):
        src = self.gen(torch_array(flavor="neg"))
        self.assertIn("v = torch.tensor(-24.0, dtype=torch.float32)", src)
        self.assertIn("x_neg = torch.complex(torch.zeros_like(v), -v).conj().imag", src)
        self.assertIn("if not x_neg.is_neg():", src)
        src = self.gen(torch_array("float16", shape=(2,), layout="strided", flavor="neg"))
        self.assertIn("x_complex = torch.empty_strided((2,), (2,), dtype=torch.complex32).copy_(", src)
        self.assertIn("x_neg = x_complex.conj().imag", src)

    def test_requires_grad_flavor(self):
        src = self.gen(torch_array(flavor="requires-grad"))
        self.assertIn("x_grad = torch.tensor(-24.0, dtype=torch.float32).requires_grad_()", src)

    def test_create_tensor_is_a_ctypes_producer_with_byte_offset(self):
        src = self.gen(tensor(layout="offset"), {"op": "read", "src": "#0"})
        self.assertIn('producer = Producer(struct.pack("<4f", 0.0, 0.0, 0.0, -24.0), dtype=(2, 32), shape=(), '
                      'strides=(), byte_offset=12)', src)
        self.assertIn("class DLManagedTensor(ctypes.Structure):", src)
        self.assertIn('b"dltensor"', src)
        self.assertIn('expect("producer\'s memory", -24.0, struct.unpack_from("<f", producer.storage, 12)[0])', src)

    def test_create_tensor_strides(self):
        src = self.gen(tensor("int8", (2, 3), "transposed"), tensor("float16", (2,), "strided"))
        self.assertIn("dtype=(0, 8), shape=(2, 3), strides=(1, 2), byte_offset=0)", src)
        self.assertIn('Producer(struct.pack("<4e", -24.0, 0.0, -20.5, 0.0), dtype=(2, 16), shape=(2,), strides=(2,)',
                      src)

    def test_exports(self):
        src = self.gen(tensor(), torch_array(), numpy_array(), {"op": "export-tensor", "src": "#0"},
                       {"op": "export-array", "src": "#1", "via": "to_dlpack"},
                       {"op": "export-array", "src": "#2", "via": "__dlpack__"})
        self.assertIn("capsule = producer.__dlpack__()", src)
        self.assertIn("    capsule2 = torch.utils.dlpack.to_dlpack(x)", src)
        self.assertIn("    capsule3 = a.__dlpack__()", src)
        self.assertIn("import torch.utils.dlpack", src)
        # A refusal the model does not predict is allowed by the protocol: the file ends there, status 0.
        self.assertIn("except (BufferError, RuntimeError) as e:", src)
        self.assertIn("sys.exit(0)", src)

    def test_predicted_refusal_may_happen_or_must_give_the_values(self):
        src = self.gen(torch_array("complex64", flavor="conj"), raises({"op": "export-array", "src": "#0",
                                                                         "via": "to_dlpack"}))
        self.assertIn("try:\n    capsule = torch.utils.dlpack.to_dlpack(x_conj)\n"
                      "except (BufferError, RuntimeError) as e:", src)
        self.assertIn('    expect("torch.from_dlpack(torch.utils.dlpack.to_dlpack(x_conj))", (-24-9.75j), '
                      'torch.from_dlpack(capsule).tolist())', src)
        self.assertIn("    del capsule", src)

    def test_peer_imports_check_the_new_object(self):
        src = self.gen(tensor(), torch_array(), {"op": "peer-from-tensor", "peer": "numpy", "src": "#0"},
                       {"op": "peer-from-array", "peer": "torch", "src": "#1"})
        self.assertIn("    arr = np.from_dlpack(producer)", src)
        self.assertIn('expect("np.from_dlpack(producer)", -24.0, arr.tolist())', src)
        self.assertIn("    y = torch.from_dlpack(x)", src)
        self.assertIn('expect("torch.from_dlpack(x)", -24.0, y.tolist())', src)

    def test_bare_capsules_reach_numpy_through_a_holder(self):
        src = self.gen(torch_array(), {"op": "export-array", "src": "#0", "via": "__dlpack__"},
                       {"op": "peer-from-capsule", "peer": "numpy", "src": "#1"},
                       raises({"op": "peer-from-capsule", "peer": "torch", "src": "#1"}))
        self.assertIn("class Holder:", src)
        self.assertIn("arr = np.from_dlpack(Holder(capsule))", src)
        # The second import of a consumed capsule must be refused: its success is the failure.
        self.assertIn('    expect("torch.from_dlpack(capsule)", "refused", "accepted")', src)

    def test_peer_malformed(self):
        src = self.gen(tensor(), raises({"op": "peer-malformed", "peer": "torch", "src": "#0", "kind": "wrong-name"}),
                       raises({"op": "peer-malformed", "peer": "numpy", "src": "#0", "kind": "device"}),
                       {"op": "peer-malformed", "peer": "numpy", "src": "#0", "kind": "null-deleter"})
        self.assertIn('torch.from_dlpack(producer.__dlpack__(name=b"not_dltensor"))', src)
        self.assertIn("np.from_dlpack(Holder(producer.__dlpack__(device=2)))", src)
        self.assertIn("np.from_dlpack(Holder(producer.__dlpack__(deleter=False)))", src)
        self.assertIn("parked = {}", src)

    def test_drop_and_collect(self):
        src = self.gen(torch_array("complex64", flavor="conj"), {"op": "drop", "src": "#0"}, {"op": "collect"})
        self.assertIn("\ndel x_conj\ngc.collect()\n", src)
        self.assertIn("import gc", src)

    def test_leak_check_watches_every_producer_root(self):
        src = self.gen(torch_array("complex64", flavor="conj"), tensor(), torch_array(flavor="neg"),
                       {"op": "export-tensor", "src": "#1"}, finding=LEAK)
        self.assertIn("x_alive = weakref.ref(x)", src)  # the conj view's root
        self.assertIn("producer_alive = weakref.ref(producer)", src)
        self.assertIn("x_complex_alive = weakref.ref(x_complex)", src)
        self.assertIn("del x_conj, x, producer, x_neg, x_complex, capsule", src)
        self.assertIn('expect("x after del and gc.collect()", "freed", "freed" if x_alive() is None else '
                      '"alive, with its 8-byte storage")', src)
        # An unconsumed capsule releases its export.
        self.assertIn("def destructor(capsule, api=api, live=Producer.live):", src)

    def test_leak_check_is_inferred_from_the_reproducers_or_title(self):
        with_msg = dict(FINDING, reproducers=[{"expect": {"asan": {"message": "producer bytes still held after"}}}])
        self.assertIn("weakref.ref(x)", torch_py.generate(program(torch_array()), with_msg))
        self.assertIn("weakref.ref(x)", torch_py.generate(program(torch_array()), dict(FINDING, title="it leaks")))
        self.assertNotIn("weakref", torch_py.generate(program(torch_array()), FINDING))
        off = dict(FINDING, title="it leaks", report={"check": "values"})
        self.assertNotIn("weakref", torch_py.generate(program(torch_array()), off))

    def test_reduced_programs_are_short(self):
        for bug_id, prog in REDUCED.items():
            with self.subTest(bug_id):
                src = torch_py.generate(prog, dict(FINDING, id=bug_id, title=bug_id))
                limit = 45 if bug_id == "torch-from-dlpack-byte-offset-ignored" else 30  # ctypes' DLPack structs
                self.assertLessEqual(code_lines(src), limit, src)


class Refuse(unittest.TestCase):
    """What the public API cannot express is a ValueError naming the op."""

    def refused(self, *ops, match):
        with self.assertRaises(ValueError) as cm:
            torch_py.generate(program(*ops), FINDING)
        self.assertRegex(str(cm.exception), match)

    def test_lifelines_own_consumer(self):
        self.refused(tensor(), {"op": "export-tensor", "src": "#0"}, {"op": "import-capsule", "src": "#1"},
                     match=r"#2 import-capsule")
        self.refused(tensor(), {"op": "import-from-tensor", "src": "#0", "contiguous": True},
                     match="import-from-tensor")
        self.refused(numpy_array(), {"op": "import-from-array", "src": "#0"}, match="import-from-array")
        self.refused(tensor(), {"op": "malformed", "src": "#0", "kind": "null-data"}, match="#1 malformed")
        self.refused({"op": "view-buffer", "src": "#0"}, match="view-buffer")
        self.refused({"op": "make-cycle", "src": "#0"}, match="make-cycle")

    def test_neg_without_a_public_construction(self):
        for dtype in ("bfloat16", "int8"):
            with self.subTest(dtype):
                self.refused(torch_array(dtype, flavor="neg"), match=rf"#0 create-array: a negated view of {dtype}")

    def test_unknown_op_operand_or_format(self):
        self.refused({"op": "teleport"}, match="'teleport'")
        self.refused(torch_array(), {"op": "read", "src": "#7"}, match="#1 read: src '#7'")
        self.refused(torch_array(dtype="float8"), match="dtype 'float8'")
        self.refused(torch_array(dtype="uint16"), match="PyTorch 1.13 has no uint16")
        self.refused(numpy_array(dtype="bfloat16"), match="NumPy has no bfloat16")
        with self.assertRaises(ValueError):
            torch_py.generate({"format": "graph", "ops": []}, FINDING)

    def test_unexportable_is_a_value_error(self):
        self.assertTrue(issubclass(torch_py.Unexportable, ValueError))


def have_torch() -> bool:
    try:
        return subprocess.run([PY, "-c", "import torch, numpy"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


HAVE_TORCH = have_torch()


# A warm interpreter (Run.setUpClass): it imports torch and NumPy once, then for each path read from stdin forks
# a child that runs the file as `python3 FILE` would (as __main__, its uncaught exception printed and status 1,
# the interpreter's own shutdown after it) with stdout and stderr in FILE.out and FILE.err, and writes back one
# line: the child's status as subprocess reports it (negative: the signal that ended it). `import torch` costs
# about 1.3 CPU-s, once per file before; the files still start from an interpreter that has done nothing else.
WARM = r"""
import os, runpy, sys, traceback
import numpy, torch
for line in sys.stdin:
    path = line.rstrip("\n")
    pid = os.fork()
    if pid == 0:
        for fd, suffix in ((1, ".out"), (2, ".err")):
            os.dup2(os.open(path + suffix, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
        sys.stdin = None
        sys.argv = [path]
        code = 0
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as e:
            code = e.code
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.exit(code)
    _, status = os.waitpid(pid, 0)
    print(-os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status), flush=True)
"""


@unittest.skipUnless(HAVE_TORCH, f"{PY} cannot import torch and numpy (python3-torch, python3-numpy)")
class Run(unittest.TestCase):
    """Generated files run under the interpreter the project pins (Debian's python3 with torch 1.13): each in a
    child of a warm interpreter (WARM), and one of them also as `python3 FILE` (test_a_file_runs_alone_too)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.warm = subprocess.Popen([PY, "-c", WARM], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        cls.files = 0

    @classmethod
    def tearDownClass(cls):
        cls.warm.stdin.close()
        cls.warm.wait(timeout=60)
        cls.tmp.cleanup()

    def run_source(self, src: str, alone: bool = False):
        cls = type(self)
        cls.files += 1
        path = Path(cls.tmp.name) / f"repro{cls.files}.py"
        path.write_text(src)
        if alone:
            p = subprocess.run([PY, str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               timeout=300)
            return p.returncode, p.stdout, p.stderr
        cls.warm.stdin.write(f"{path}\n")
        cls.warm.stdin.flush()
        status = cls.warm.stdout.readline()
        self.assertTrue(status, "the warm interpreter ended")
        return (int(status), Path(f"{path}.out").read_text(errors="replace"),
                Path(f"{path}.err").read_text(errors="replace"))

    def test_a_file_runs_alone_too(self):
        # The route a maintainer takes: one finding's file under a fresh `python3 FILE`, failing as in the warm one.
        bug_id = "torch-dlpack-neg-bit-ignored"
        src = torch_py.generate(REDUCED[bug_id], finding(bug_id))
        warm, alone = self.run_source(src), self.run_source(src, alone=True)
        self.assertEqual(alone[0], 1, alone[1] + alone[2])
        self.assertEqual(warm[:2], alone[:2])
        self.assertEqual(warm[2].strip().splitlines()[-1], alone[2].strip().splitlines()[-1])
        self.assertIn("AssertionError: ", alone[2])

    def test_the_aborting_finding_terminates_with_its_message(self):
        for bug_id, want in ABORTS.items():
            with self.subTest(bug_id):
                src = torch_py.generate(REDUCED[bug_id], finding(bug_id))
                self.assertIn("Aborts (std::terminate) while the bug is there", src.splitlines()[2])
                rc, out, err = self.run_source(src)
                self.assertEqual(rc, -6, out + err)  # SIGABRT
                self.assertIn("terminate called after throwing an instance of 'c10::Error'", err)
                self.assertIn(want, err)
                self.assertIn("contract:", out)

    def test_every_layout_of_every_party_reads_back_its_values(self):
        # What torch_capsule_lifecycle's programs now draw, written out: each object read where it is made and
        # after the imports of it, through both peers. The file must exit 0 on the pinned torch and NumPy.
        ops = [tensor("float32", (2, 3), "reversed", 5), tensor("float16", (3, 2), "broadcast", 7),
               tensor("int8", (2, 2), "null-strides", 9), numpy_array("float32", (2, 3), "reversed", 3),
               numpy_array("float16", (3, 2), "broadcast", 4), torch_array("complex64", (2, 3), "broadcast", 8),
               torch_array("float32", (3, 2, 2), "broadcast", 6, "conj") | {"dtype": "complex64"}]
        ops += [{"op": "read", "src": f"#{i}"} for i in range(len(ops))]
        made = len(ops)
        imports = [("numpy", 0), ("torch", 1), ("torch", 2), ("numpy", 2), ("numpy", 3), ("torch", 4),
                   ("numpy", 5)]
        for peer, src in imports:
            ops.append({"op": "peer-from-tensor" if src < 3 else "peer-from-array", "peer": peer, "src": f"#{src}"})
        ops += [{"op": "read", "src": f"#{made + i}"} for i in range(len(imports))]
        src = torch_py.generate(program(*ops), FINDING)
        self.assertIn("strides=None", src)  # the null-strides producer
        self.assertIn("[..., ::-1].copy()[..., ::-1]", src)
        self.assertIn("np.lib.stride_tricks.as_strided(", src)
        rc, out, err = self.run_source(src)
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(out.count(": expected "), 2 * len(imports) + 7, out)

    def test_reversed_all_unit_strides_and_export_arguments_run_as_predicted(self):
        # The layouts and __dlpack__ keyword arguments of 2026-11-27, written out and run on the pinned parties:
        # values read back after every import, and each party's answer to the arguments (torch takes an integer
        # stream on the CPU, NumPy refuses any stream with RuntimeError, both refuse max_version with TypeError).
        ops = [tensor("float32", (2, 3), "reversed-all", 5), tensor("int8", (3, 1), "unit-strides", 9),
               numpy_array("float16", (2, 3), "reversed-all", 3), numpy_array("float32", (1, 3, 1), "unit-strides", 4),
               torch_array("float32", (2, 1, 3, 1), "unit-strides", 6) | {"export_args": "stream=1"},
               numpy_array("int8", (2,), "contiguous", 2) | {"export_args": "stream=-1"},
               torch_array("float32", (2,), "contiguous", 1) | {"export_args": "max_version=(1, 0)"}]
        ops += [{"op": "read", "src": f"#{i}"} for i in range(5)]
        imports = [("numpy", 0), ("torch", 1), ("numpy", 2), ("torch", 3), ("numpy", 4)]
        made = len(ops)
        for peer, src in imports:
            ops.append({"op": "peer-from-tensor" if src < 2 else "peer-from-array", "peer": peer, "src": f"#{src}"})
        ops += [{"op": "read", "src": f"#{made + i}"} for i in range(len(imports))]
        ops += [{"op": "export-array", "src": "#4", "via": "__dlpack__"},
                raises({"op": "export-array", "src": "#5", "via": "__dlpack__"}),
                raises({"op": "export-array", "src": "#6", "via": "__dlpack__"}, "TypeError")]
        src = torch_py.generate(program(*ops), FINDING)
        self.assertIn("x.__dlpack__(stream=1)", src)
        self.assertIn("np.flip(np.flip(", src)
        self.assertIn("torch.empty_strided((2, 1, 3, 1), (3, 4099, 1, 4099)", src)
        rc, out, err = self.run_source(src)
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(out.count(": expected "), 5 + 2 * len(imports), out)
        self.assertNotIn("stream=1) refused", out)  # torch exported with stream=1
        self.assertIn("stream=-1) refused: RuntimeError('NumPy only supports stream=None.')", out)
        self.assertIn("max_version=(1, 0)) refused: TypeError(", out)

    def test_every_dtype_of_every_peer_reads_back_its_values(self):
        # The wider dtypes: each NumPy array and torch tensor read where it is made and after the other peer
        # imported it (torch refuses NumPy's uint16-64 with RuntimeError: the file then exits 0 at that op, so
        # those go last).
        ops = []
        for dtype in ("int16", "int32", "int64", "float64", "complex128"):
            ops += [numpy_array(dtype, (2, 3), "transposed", 5), torch_array(dtype, (3, 2), "broadcast", 7)]
            n = len(ops)
            ops += [{"op": "peer-from-array", "peer": "torch", "src": f"#{n - 2}"},
                    {"op": "peer-from-array", "peer": "numpy", "src": f"#{n - 1}"},
                    {"op": "read", "src": f"#{n - 2}"}, {"op": "read", "src": f"#{n - 1}"}]
        ops += [numpy_array("uint64", (2,), "reversed", 1), {"op": "read", "src": f"#{len(ops)}"}]
        src = torch_py.generate(program(*ops), FINDING)
        rc, out, err = self.run_source(src)
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(out.count(": expected "), 4 * 5 + 1, out)

    def test_the_five_findings_fail_with_their_assertion(self):
        wants = {"torch-dlpack-neg-bit-ignored": "expected -24.0, got 24.0",
                 "torch-to-dlpack-conj-bit-ignored": "expected (-24-9.75j), got (-24+9.75j)",
                 "torch-from-dlpack-byte-offset-ignored": "expected -24.0, got 0.0",
                 "torch-dlpack-refused-export-leaks": "expected freed, got alive",
                 "torch-from-dlpack-empty-leaks": "expected freed, got alive"}
        self.assertEqual(set(wants) | set(ABORTS), set(REDUCED))
        for bug_id, want in wants.items():
            with self.subTest(bug_id):
                rc, out, err = self.run_source(torch_py.generate(REDUCED[bug_id], finding(bug_id)))
                self.assertNotEqual(rc, 0, out + err)
                last = err.strip().splitlines()[-1]
                self.assertTrue(last.startswith("AssertionError: "), err)
                self.assertIn(want, last)
                self.assertIn("contract:", out)
                self.assertIn(f"expected {want.split('expected ')[1]}", out)  # printed before the assert

    def test_the_five_findings_exit_0_once_fixed(self):
        # Each fix simulated in Python before the file runs: a refusal, or the export/import done right.
        fixes = {
            "torch-dlpack-neg-bit-ignored": (  # __dlpack__ exports resolve_neg()
                "import torch\n_dl = torch.Tensor.__dlpack__\n"
                "torch.Tensor.__dlpack__ = lambda self, stream=None: _dl(self.resolve_neg(), stream)\n"),
            "torch-to-dlpack-conj-bit-ignored": (  # to_dlpack refuses the conjugate bit
                "import torch, torch.utils.dlpack\n_to = torch.utils.dlpack.to_dlpack\n"
                "def refuse(t):\n    raise BufferError('conjugate bit')\n"
                "torch.utils.dlpack.to_dlpack = lambda t: refuse(t) if t.is_conj() else _to(t)\n"),
            "torch-from-dlpack-byte-offset-ignored": (  # from_dlpack honours byte_offset (as NumPy does)
                "import numpy, torch\n"
                "torch.from_dlpack = lambda o: torch.from_numpy(numpy.from_dlpack(o).copy())\n"),
            "torch-dlpack-refused-export-leaks": (  # bool exports (as uint8 here), so nothing is refused
                "import torch\n_dl = torch.Tensor.__dlpack__\n"
                "torch.Tensor.__dlpack__ = lambda self, stream=None: "
                "_dl(self.to(torch.uint8) if self.dtype == torch.bool else self, stream)\n"),
            "torch-from-dlpack-empty-leaks": (  # an empty import that holds nothing of the export
                "import torch\n_from = torch.from_dlpack\n"
                "torch.from_dlpack = lambda o: o.clone() if isinstance(o, torch.Tensor) and o.numel() == 0 "
                "else _from(o)\n"),
            "torch-from-dlpack-negative-strides-abort": (  # pytorch#188062: the stride is refused, catchably
                "import torch\n_from = torch.from_dlpack\n"
                "def refuse(o):\n    raise RuntimeError('Storage size calculation overflowed')\n"
                "torch.from_dlpack = lambda o: refuse(o) if min(getattr(o, 'strides', ()) or (0,)) < 0 "
                "else _from(o)\n"),
        }
        self.assertEqual(set(fixes), set(REDUCED))
        for bug_id, fix in fixes.items():
            with self.subTest(bug_id):
                rc, out, err = self.run_source(fix + torch_py.generate(REDUCED[bug_id], finding(bug_id)))
                self.assertEqual(rc, 0, out + err)

    def test_programs_without_a_finding_exit_0_leak_checks_included(self):
        clean = program(
            tensor(shape=(2, 3), layout="transposed"), torch_array("complex64", (2,), "strided", 5),
            numpy_array("int8", (3,), "offset"),
            {"op": "peer-from-tensor", "peer": "numpy", "src": "#0"},     # NumPy honours byte_offset and strides
            {"op": "peer-from-array", "peer": "numpy", "src": "#1"},
            {"op": "peer-from-array", "peer": "torch", "src": "#2"},
            {"op": "export-tensor", "src": "#0"},                          # a capsule nobody consumes
            {"op": "export-array", "src": "#1", "via": "__dlpack__"},
            {"op": "peer-from-capsule", "peer": "numpy", "src": "#7"},
            raises({"op": "peer-from-capsule", "peer": "torch", "src": "#7"}),   # consumed
            raises({"op": "peer-malformed", "peer": "torch", "src": "#0", "kind": "device"}),
            raises({"op": "peer-malformed", "peer": "numpy", "src": "#0", "kind": "wrong-name"}, "ValueError"),
            {"op": "read", "src": "#0"}, {"op": "read", "src": "#1"}, {"op": "drop", "src": "#6"},
            {"op": "collect"}, torch_array(flavor="requires-grad"),
            raises({"op": "peer-from-array", "peer": "numpy", "src": "#16"}),  # __dlpack__ refuses requires_grad
            {"op": "export-array", "src": "#16", "via": "to_dlpack"})
        rc, out, err = self.run_source(torch_py.generate(clean, LEAK))
        self.assertEqual(rc, 0, out + err)
        self.assertIn('producer after del and gc.collect(): expected freed, got freed', out)
        self.assertIn('x after del and gc.collect(): expected freed, got freed', out)
        self.assertNotIn("Exception ignored", err)

    def test_an_allowed_refusal_ends_the_file_with_status_0(self):
        # __dlpack__ of a tensor that requires grad is refused, which the model does not predict here.
        src = torch_py.generate(program(torch_array(flavor="requires-grad"),
                                        {"op": "peer-from-array", "peer": "numpy", "src": "#0"}), FINDING)
        rc, out, err = self.run_source(src)
        self.assertEqual(rc, 0, out + err)
        self.assertIn("np.from_dlpack(x_grad) refused (RuntimeError(", out)


if __name__ == "__main__":
    unittest.main()
