"""bench/profile.py's owner rules: each sample is charged to the first recognised frame from the sampled instruction
up (libc's and libstdc++'s functions pass through to their caller), the kernel and ggml's waiting threads are owners
of their own, and the table's shares divide the CPU-s printed beside them."""
import importlib.util
import re
import unittest

from support import ROOT

# bench/profile.py by its path: as `profile` it would be the standard library's module of that name.
_spec = importlib.util.spec_from_file_location("bench_profile", ROOT / "bench" / "profile.py")
prof = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(prof)

FILES = {
    "whisper_model_load": "/work/main/build/upstream/whisper.cpp/src/whisper.cpp",
    "ggml_backend_sched_new": "/work/main/build/upstream/whisper.cpp/ggml/src/ggml-backend.cpp",
    "_ZN8lifeline7handoff7ExecuteERKNS0_7ProgramERNS0_10JobBindingE": "/work/main/harness/programs/handoff/executor.cc",
    "_ZN8lifeline7interop8JobQueue3RunEv": "/work/main/layers/interop/jobs.cc",
    "_ZNSt8_Rb_treeIiSt4pairIKiiESt10_Select1stIS2_ESt4lessIiESaIS2_EE8_M_eraseEPSt13_Rb_tree_nodeIS2_E":
        "/usr/include/c++/12/bits/stl_tree.h",
}
BIN = "whisper_string_handoff"

# perf script -F period,ip,sym,dso --no-demangle: a period line, one frame per line, a blank line.
SCRIPT = """\
   5000000 
\tffffffff82242009 pvm_irq_enable ([kernel.kallsyms])
\tffffffff81000c82 asm_exc_page_fault ([kernel.kallsyms])
\t           1de38 __memset_avx512_unaligned_erms (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t          a2b060 _ZN6__asan9Allocator8AllocateEmmPN11__sanitizer18BufferedStackTraceENS_9AllocTypeEb (/b/whisper_string_handoff)
\t          b74ac0 ggml_backend_sched_new (/b/whisper_string_handoff)

   3000000 
\t           1de38 __memset_avx512_unaligned_erms (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t          a2b060 _ZN6__asan9Allocator8AllocateEmmPN11__sanitizer18BufferedStackTraceENS_9AllocTypeEb (/b/whisper_string_handoff)
\t          b74ac0 ggml_backend_sched_new (/b/whisper_string_handoff)

   2000000 
\t          a000f0 _ZNSt8_Rb_treeIiSt4pairIKiiESt10_Select1stIS2_ESt4lessIiESaIS2_EE8_M_eraseEPSt13_Rb_tree_nodeIS2_E+0x20 (/b/whisper_string_handoff)
\t          b74ac0 whisper_model_load+0x1f0 (/b/whisper_string_handoff)
\t          c00000 _ZN8lifeline7handoff7ExecuteERKNS0_7ProgramERNS0_10JobBindingE (/b/whisper_string_handoff)

   1000000 
\t          a0e840 _ZN6fuzzer6Fuzzer6RunOneEPKhmbPNS_9InputInfoEbPb (/b/whisper_string_handoff)

   1000000 
\t          b00000 ggml_thread_cpu_relax (/b/whisper_string_handoff)
\t          b00010 ggml_graph_compute_thread (/b/whisper_string_handoff)

   1000000 
\t          a0e000 __sanitizer_cov_trace_cmp4 (/b/whisper_string_handoff)
\t          c00000 _ZN8lifeline7handoff7ExecuteERKNS0_7ProgramERNS0_10JobBindingE (/b/whisper_string_handoff)

   1000000 
\t          c00000 _ZN8lifeline7handoff7ExecuteERKNS0_7ProgramERNS0_10JobBindingE (/b/whisper_string_handoff)

   500000 
\t          d00000 _ZN8lifeline7interop8JobQueue3RunEv (/b/whisper_string_handoff)

   500000 
\t           1de38 strlen (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t           1de38 start_thread (/usr/lib/x86_64-linux-gnu/libc.so.6)

   400000 
\t          a10000 __interceptor_free (/b/whisper_string_handoff)
\t          b74ac0 whisper_model_load (/b/whisper_string_handoff)

   300000 
\t          a10000 _ZN7__ubsan26handleTypeMismatch_v1AbortEv (/b/whisper_string_handoff)
"""


class Owners(unittest.TestCase):
    def setUp(self):
        self.samples = list(prof.parse_script(SCRIPT.splitlines(keepends=True)))

    def test_every_sample_is_read_with_its_period_and_its_frames(self):
        self.assertEqual([p for p, _ in self.samples],
                         [5000000, 3000000, 2000000, 1000000, 1000000, 1000000, 1000000, 500000, 500000, 400000,
                          300000])
        self.assertEqual(self.samples[2][1][1], ("whisper_model_load", BIN))  # +0x1f0 is not part of the name
        self.assertEqual(self.samples[0][1][0], ("pvm_irq_enable", "[kernel.kallsyms]"))

    def owners(self):
        return [prof.classify(stack, FILES) for _, stack in self.samples]

    def test_each_sample_goes_to_the_first_recognised_frame(self):
        owners = [o for o, _, _ in self.owners()]
        self.assertEqual(owners, ["kernel", "sanitizer", "under test", "libFuzzer", "idle spin", "libFuzzer",
                                  "harness", "under test", "other", "sanitizer", "sanitizer"])

    def test_memset_is_charged_to_its_caller_and_the_asker_is_the_upstream_function(self):
        owner, charged, asker = self.owners()[1]
        self.assertEqual((owner, asker), ("sanitizer", "ggml_backend_sched_new"))
        self.assertTrue(charged.startswith("_ZN6__asan9Allocator8Allocate"), charged)
        self.assertEqual(self.owners()[0][2], "ggml_backend_sched_new")  # the page fault's asker too

    def test_a_header_instantiation_passes_through_to_the_code_that_called_it(self):
        self.assertEqual(self.owners()[2][:2], ("under test", "whisper_model_load"))

    def test_files_decide_between_the_harness_and_the_project_layers(self):
        self.assertEqual(prof.owner_of_file("/x/harness/programs/handoff/executor.cc"), "harness")
        self.assertEqual(prof.owner_of_file("/x/core/guards.cc"), "harness")
        self.assertEqual(prof.owner_of_file("/x/targets/whisper_string_handoff.cc"), "harness")
        self.assertEqual(prof.owner_of_file("/x/layers/alloc/gallocr.cc"), "under test")
        self.assertEqual(prof.owner_of_file("/x/build/upstream/llama.cpp/src/llama.cpp"), "under test")
        self.assertEqual(prof.owner_of_file("/usr/include/c++/12/bits/stl_tree.h"), "")

    def test_the_table_shares_divide_the_cpu_seconds_beside_them(self):
        b = prof.breakdown(iter(self.samples), FILES)
        self.assertEqual(b["total"], sum(p for p, _ in self.samples))
        s = prof.summarize(b)
        s["run"] = "replay"
        lines = prof.table([s])
        head = [c.strip() for c in lines[0].strip("|").split("|")]
        rows = [dict(zip(head, (c.strip() for c in line.strip("|").split("|")))) for line in lines[2:]]
        self.assertEqual([r["owner"] for r in rows], list(prof.OWNERS) + ["all"])
        for r in rows:
            cpu, share = float(r["replay: CPU-s"]), r["replay: share"]
            self.assertEqual(share, f"{100 * cpu / s['cpu_s']:.1f}%" if s["cpu_s"] else "-", r)
        self.assertEqual(rows[-1]["replay: share"], "100.0%")

    def test_the_asker_table_holds_only_the_kernel_and_the_sanitizer(self):
        s = prof.summarize(prof.breakdown(iter(self.samples), FILES))
        self.assertEqual({a["owner"] for a in s["askers"]}, {"kernel", "sanitizer"})
        self.assertEqual(sorted(a["asked_by"] for a in s["askers"]),
                         ["(none)", "ggml_backend_sched_new", "ggml_backend_sched_new", "whisper_model_load"])
        self.assertFalse(any(re.search(r"\(.*\)$", a["asked_by"]) for a in s["askers"] if a["asked_by"] != "(none)"))


if __name__ == "__main__":
    unittest.main()
