"""The C exporter of graph programs (cli/lifeline/exporters/ggml_c.py) on programs written here: what the C does
for each step, in ggml's terms. Where the asan lane built ggml, one file is compiled and run against it."""
import json
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

from lifeline.exporters import ggml_c
from support import BUILD, ROOT

A1 = {"buffers": [32], "threads": 1}


def program(*ops, allocators=(A1, A1)):
    return {"format": "graph", "allocators": list(allocators), "ops": [dict(op, id=i) for i, op in enumerate(ops)]}


def leaf(**kw):
    return dict({"op": "leaf", "type": "f32", "ne": [4, 2], "input": True, "preallocated": False}, **kw)


def c_of(p, **report):
    return ggml_c.generate(p, {"id": "ggml-test-finding", "title": "t", "backend": "cpu", "report": report})


# x -> neg_x, sealed as graph 1 (op 2), placed and computed by allocator 0.
ONE = [leaf(), {"op": "unary", "fn": "neg", "src": "#0", "inplace": False, "cpu": False}, {"op": "seal"},
       {"op": "alloc+compute", "graph": "#2", "allocator": 0}]


class GgmlExport(unittest.TestCase):
    def test_uses_only_ggmls_public_headers_and_names_tensors_by_role(self):
        c = c_of(program(*ONE))
        self.assertEqual([l for l in c.splitlines() if l.startswith("#include \"")],
                         ['#include "ggml.h"', '#include "ggml-alloc.h"', '#include "ggml-backend.h"', '#include "ggml-cpu.h"'])
        self.assertIn("struct ggml_tensor * x = ggml_new_tensor_2d(ctx1, GGML_TYPE_F32, 4, 2);", c)
        self.assertIn("struct ggml_tensor * neg_x = output(gf1, ggml_neg(ctx1, x));", c)
        self.assertIn("if (!ggml_gallocr_alloc_graph(galloc, gf1))", c)
        self.assertIn("ggml_backend_graph_compute(cpu, gf1);", c)
        self.assertNotIn("lifeline", c.split("*/", 1)[1])  # past the header comment

    def test_each_placement_builds_its_graph_afresh(self):
        c = c_of(program(*ONE, {"op": "reserve", "graph": "#2", "allocator": 0}))
        self.assertIn("struct ggml_context * ctx2 = new_context();", c)
        self.assertIn("ggml_gallocr_reserve(galloc, gf2);", c)
        self.assertIn("struct ggml_tensor * x2 = ", c)

    def test_two_buffers_reserve_with_buffer_ids(self):
        c = c_of(program(*ONE[:3], {"op": "reserve", "graph": "#2", "allocator": 0},
                         allocators=({"buffers": [32, 64], "threads": 1}, A1)))
        self.assertIn("ggml_gallocr_new_n(galloc_types, 2)", c)
        self.assertIn("ggml_gallocr_reserve_n(galloc, gf1, buffer_ids, buffer_ids);", c)

    def test_threads_above_one_compute_on_a_pool_kept_per_count(self):
        c = c_of(program(*ONE, {"op": "alloc+compute", "graph": "#2", "allocator": 0},
                         allocators=({"buffers": [32], "threads": 3}, A1)))
        self.assertEqual(c.count("ggml_threadpool_new("), 1)
        self.assertIn("ggml_backend_cpu_set_threadpool(cpu, pool);", c)
        self.assertIn("ggml_backend_cpu_set_n_threads(cpu, 3);", c)
        self.assertIn("ggml_threadpool_free(pool);", c)

    def test_pool_computes_become_a_loop(self):
        c = c_of(program(*ONE), check="pool-computes", pool_computes=32767)
        self.assertIn("for (int i = 0; i < 32767; ++i) ggml_backend_graph_compute(cpu, gf1);", c)

    def test_steps_predicted_to_fail_are_left_out(self):
        p = program(*ONE[:3], {"op": "alloc+compute", "graph": "#2", "allocator": 0,
                               "model": {"expect": "FAILED_PRECONDITION"}})
        c = c_of(p)
        self.assertIn("/* a alloc+compute the program predicts to be refused (FAILED_PRECONDITION): left out */", c)
        self.assertNotIn("ggml_gallocr_alloc_graph", c)

    def test_a_preallocated_leaf_gets_a_buffer_of_its_own(self):
        c = c_of(program(leaf(preallocated=True, input=False), {"op": "seal"},
                         {"op": "alloc+compute", "graph": "#1", "allocator": 0}))
        self.assertIn("ggml_backend_buffer_t w_own_buf = ggml_backend_alloc_buffer(cpu, ggml_nbytes(w_own) + 64);", c)
        self.assertIn("ggml_backend_tensor_alloc(w_own_buf, w_own, ggml_backend_buffer_get_base(w_own_buf));", c)
        self.assertIn("ggml_backend_buffer_free(w_own_buf);", c)

    def test_a_view_of_another_graph_views_its_latest_placement(self):
        c = c_of(program(*ONE, {"op": "view-external", "of": "#1"},
                         {"op": "unary", "fn": "neg", "src": "#4", "inplace": False, "cpu": False}, {"op": "seal"},
                         {"op": "alloc+compute", "graph": "#6", "allocator": 1}))
        self.assertIn("struct ggml_tensor * view_of_neg_x = ggml_view_tensor(ctx2, neg_x);", c)
        self.assertIn("ggml_gallocr_alloc_graph(galloc1, gf2)", c)

    def test_a_rewire_is_a_comment_and_the_next_build_follows_it(self):
        p = program(leaf(), leaf(), {"op": "unary", "fn": "neg", "src": "#0", "inplace": False, "cpu": False},
                    {"op": "seal"}, {"op": "alloc+compute", "graph": "#3", "allocator": 0},
                    {"op": "rewire", "graph": "#3", "tensor": "#2", "slot": 0, "to": "#1"},
                    {"op": "alloc+compute", "graph": "#3", "allocator": 0})
        c = c_of(p, check="fresh-gallocr")
        self.assertIn("input 0 of a neg now reads another tensor of the same shape", c)
        self.assertIn("for (int pass = 0; pass < 2; ++pass) {", c)  # the last placement, and a new gallocr's
        self.assertIn("ggml_gallocr_alloc_graph(pass == 0 ? galloc : fresh, gf2)", c)
        self.assertIn("same_outputs(out2[0], out2[1], 1);", c)

    def test_supports_op_is_asked_before_computing(self):
        self.assertIn("ask_supports_op(cpu, gf1);", c_of(program(*ONE), check="supports-op"))

    def test_programs_it_cannot_write_are_refused(self):
        with self.assertRaises(ggml_c.Unexportable):
            ggml_c.generate({"format": "capsule", "ops": []}, {"id": "x"})
        with self.assertRaises(ggml_c.Unexportable):
            c_of(program(*ONE, {"op": "fly"}))

    def test_a_scheduled_program_places_every_graph_by_the_scheduler_splitting_every_other_placement_alone(self):
        p = program(*ONE, {"op": "alloc+compute", "graph": "#2", "allocator": 0})
        p["scheduled"] = True
        c = ggml_c.generate(p, {"id": "ggml-test-finding", "title": "t", "backend": "vulkan", "report": {}})
        self.assertNotIn("ggml_gallocr_alloc_graph", c)
        self.assertEqual(c.count("ggml_backend_sched_alloc_graph(sched, "), 2)
        self.assertEqual(c.count("ggml_backend_sched_split_graph(sched, "), 1)
        # The split alone is of a build of its own (gf3), between the second build (gf2) and its placement.
        self.assertLess(c.index("ggml_new_graph(ctx2)"), c.index("ggml_backend_sched_split_graph(sched, gf3);"))
        self.assertLess(c.index("ggml_backend_sched_split_graph(sched, gf3);"),
                        c.index("ggml_backend_sched_alloc_graph(sched, gf2)"))
        del p["scheduled"]
        self.assertNotIn("sched", ggml_c.generate(p, {"id": "x", "title": "t", "backend": "vulkan", "report": {}}))

    def test_code_lines_leave_out_blank_and_comment_lines(self):
        self.assertEqual(ggml_c.code_lines("/* a\n * b */\nint x;\n\n// c\n  y = 1; /* d */\n"), 2)


@unittest.skipUnless((BUILD / "ggml" / "src" / "libggml-cpu.a").is_file(), "the asan lane's ggml is not built")
class CompiledExport(unittest.TestCase):
    def test_a_written_program_compiles_against_ggml_and_runs_clean(self):
        tmp = Path(tempfile.mkdtemp())
        try:
            (tmp / "one.c").write_text(c_of(program(*ONE), check="supports-op"))
            inc = ROOT / "build" / "upstream" / "llama.cpp" / "ggml" / "include"
            lib = BUILD / "ggml" / "src"
            subprocess.run(["clang-14", "-std=c11", "-g", "-O1", "-fsanitize=address,undefined", "-c", tmp / "one.c",
                            "-I", inc, "-o", tmp / "one.o"], check=True)
            subprocess.run(["clang++-14", "-fsanitize=address,undefined", tmp / "one.o", "-L", lib, "-lggml",
                            "-lggml-cpu", "-lggml-base", "-lm", "-lpthread", "-o", tmp / "one"], check=True)
            supp = tmp / "ubsan.supp"
            supp.write_text("pointer-overflow:ggml_graph_nbytes\n")
            proc = subprocess.run([tmp / "one"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  env={"UBSAN_OPTIONS": f"suppressions={supp}", "ASAN_OPTIONS": "detect_leaks=1",
                                       "PATH": "/usr/bin"})
            self.assertEqual(proc.returncode, 0, proc.stdout)
            self.assertIn("ggml_backend_supports_op(CPU, NEG on f32) = 1", proc.stdout)
            self.assertIn("the program ran to its end", proc.stdout)
        finally:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    unittest.main()
