"""The llama.h exporter (cli/lifeline/exporters/llama_c.py): a llama-runtime program (harness/programs/llama/codec.h)
as C on llama.h: the program's tiny model and context, each op as its llama.h call in the program's order, every
return the model predicts and llama_memory_seq_keep's contract checked; what it cannot write is refused with the
reason. Where the fuzz lane built llama_memory_differential, the checked-in finding's export (its compile-and-run
check is the fuzz lane's ctest repro.llama-kv-seq-keep-other-streams.fuzz.export)."""
import json
import unittest

from support import ROOT

from lifeline.exporters import ggml_c, llama_c

FINDING = {"id": "x", "title": "t", "report": {"contract": "c", "expected": "e"}}


def program(ops, **header):
    p = {"format": "llama", "arch": "llama", "n_seq_max": 2, "kv_unified": True, "n_ubatch": 4, "n_batch": 4,
         "flash_attn": "auto", "type_k": "f16", "type_v": "f16", "threads": 1, "ops": ops}
    p.update(header)
    return p


def decode(i, seqs, steps, expect=0, **kw):
    op = {"id": i, "op": "decode", "seqs": seqs, "steps": steps, "shared": False, "all_logits": False, "tokens": 3,
          "flaw": "none", "model": {"expect": expect, "state": "kv/empty"}}
    op.update(kw)
    return op


class LlamaC(unittest.TestCase):
    def body(self, c):
        """The lines of main after the context is made: the program's ops."""
        ops = c.split("!(mem = llama_get_memory(ctx))) return 2;", 1)[1]
        return [line.strip() for line in ops.splitlines() if line.strip() and not line.strip().startswith("/*")]

    def test_each_op_is_its_llama_h_call_in_the_programs_order(self):
        c = llama_c.generate(program([
            decode(0, [0, 1], 2),
            {"id": 1, "op": "save-seq", "seq": 0, "slot": 1, "model": {}},
            {"id": 2, "op": "seq-rm", "seq": 0, "p0": 1, "p1": -1, "model": {"expect": True}},
            {"id": 3, "op": "load-seq", "slot": 1, "seq": 0, "model": {"expect": "restored"}},
            {"id": 4, "op": "seq-cp", "seq": 0, "dst": 1, "p0": -1, "p1": -1, "model": {}},
            {"id": 5, "op": "seq-add", "seq": 1, "p0": 0, "p1": 4, "delta": -2, "model": {}},
            {"id": 6, "op": "set-threads", "threads": 2, "model": {}},
            {"id": 7, "op": "clear", "data": True, "model": {}},
        ]), FINDING)
        calls = [line for line in self.body(c) if line.startswith(("decode(", "llama_", "r = ", "free(saved"))]
        self.assertEqual(calls[0], "decode(3, 2, 0, 3, 0);  /* #0 decode */")
        self.assertTrue(calls[1].startswith("free(saved[1]), size[1] = llama_state_seq_get_size(ctx, 0);"))
        self.assertEqual(calls[2], "llama_state_seq_get_data(ctx, saved[1] = malloc(size[1]), size[1], 0);")
        self.assertIn("r = llama_memory_seq_rm(mem, 0, 1, -1), check(r == 1,", calls[3])
        self.assertIn("r = (long) llama_state_seq_set_data(ctx, saved[1], size[1], 0), check(r == (long) size[1],",
                      calls[4])
        self.assertEqual(calls[5:8], ["llama_memory_seq_cp(mem, 0, 1, -1, -1);  /* #4 seq-cp */",
                                      "llama_memory_seq_add(mem, 1, 0, 4, -2);  /* #5 seq-add */",
                                      "llama_set_n_threads(ctx, 2, 2);  /* #6 set-threads */"])
        self.assertEqual(calls[8], "llama_memory_clear(mem, true);  /* #7 clear */")
        self.assertIn("cp.n_seq_max = 2, cp.n_ctx = 256, cp.n_batch = 4, cp.n_ubatch = 4;", c)
        self.assertIn("cp.kv_unified = true", c)
        self.assertIn('fprintf(stderr, "contract: %s\\nexpected: %s\\n", "c", "e");', c)
        self.assertIn("free(saved[i]);", c)  # the saved states are freed: LeakSanitizer sees no leak of the file's own
        self.assertNotIn("LIFELINE", c)

    def test_the_tiny_model_is_the_programs_kind_only(self):
        jamba = llama_c.generate(program([decode(0, [0], 1)], arch="jamba"), FINDING)
        self.assertIn('"jamba.ssm.state_size"', jamba)
        self.assertIn('gguf_set_arr_data(g, "jamba.attention.head_count_kv", GGUF_TYPE_UINT32, kv, 2);', jamba)
        self.assertIn('strstr(t->name, "ssm_a")', jamba)
        plain = llama_c.generate(program([decode(0, [0], 1)]), FINDING)
        self.assertNotIn("ssm", plain)
        self.assertIn('"llama.attention.head_count_kv"', plain)
        self.assertIn("static const uint32_t values[] = {64, 4096, 64, 2, 128, 2, 1};", plain)

    def test_the_decode_helper_has_what_the_decodes_use(self):
        simple = llama_c.generate(program([decode(0, [0, 1], 2)]), FINDING)
        self.assertIn("static void decode(int set, int steps, int all_logits, int seed, long want)", simple)
        self.assertNotIn("N_BATCH", simple)
        # 3 shared tokens > n_batch 2: calls of at most n_batch tokens; a shared token and a flaw: the general form
        general = llama_c.generate(program([decode(0, [0, 1], 3, shared=True), decode(1, [0], 1, flaw="gap", expect=-1)],
                                           n_batch=2, n_ubatch=2), FINDING)
        self.assertIn("#define N_BATCH 2", general)
        self.assertIn("decode(3, 3, 0, 3, 1, 0, 0, 0);  /* #0 decode */", general)
        self.assertIn("decode(1, 1, 0, 3, 0, 1, 0, -1);  /* #1 decode */", general)

    def test_seq_keep_checks_llama_h_s_contract_for_every_other_sequence(self):
        c = llama_c.generate(program([decode(0, [0, 1], 1), {"id": 1, "op": "seq-keep", "seq": 1, "model": {}}],
                                     kv_unified=False), FINDING)
        body = "\n".join(self.body(c))
        self.assertIn("llama_memory_seq_keep(mem, 1);", body)
        self.assertIn("check(s == 1 || llama_memory_seq_pos_max(mem, s) < 0,", body)
        self.assertIn("cp.n_ctx = 512", c)  # 256 cells per stream, a stream per sequence
        self.assertIn('assert(ok && "a contract of llama.h is broken");', c)
        self.assertIn("exit(1);", c)

    def test_what_it_cannot_write_is_refused_with_the_reason(self):
        for prog, why in [
            ({"format": "graph", "ops": []}, "not a llama-runtime program"),
            (program([decode(0, [0], 1, flaw="abort")]), "flaw 'abort' is not exported"),
            (program([{"id": 0, "op": "load-all", "slot": 2, "model": {"expect": "restored"}}]),
             "slot 2 holds no state saved by this program"),
            (program([{"id": 0, "op": "save-seq", "seq": 0, "slot": 1, "form": "file", "model": {}}]),
             "a state of form 'file' is not exported"),
            (program([{"id": 0, "op": "save-all", "slot": 1, "form": "device", "model": {}}]),
             "a state of form 'device' is not exported"),
            (program([{"id": 0, "op": "rewind", "model": {}}]), "op 'rewind' is not one this exporter knows"),
            (program([], arch="falcon"), "model kind 'falcon'"),
        ]:
            with self.subTest(why):
                with self.assertRaises(ValueError) as e:
                    llama_c.generate(prog, FINDING)
                self.assertIn(why, str(e.exception))

    def test_a_device_state_goes_through_the_ext_calls_with_its_flag(self):
        c = llama_c.generate(program([decode(0, [0], 1), {"id": 1, "op": "save-seq", "seq": 0, "slot": 0,
                                                         "form": "device", "model": {}},
                                      {"id": 2, "op": "load-seq", "slot": 0, "seq": 0,
                                       "model": {"expect": "restored"}}]), FINDING)
        self.assertIn("size[0] = llama_state_seq_get_size_ext(ctx, 0, LLAMA_STATE_SEQ_FLAGS_ON_DEVICE);", c)
        self.assertIn("llama_state_seq_get_data_ext(ctx, saved[0] = malloc(size[0]), size[0], 0, "
                      "LLAMA_STATE_SEQ_FLAGS_ON_DEVICE);", c)
        self.assertIn("llama_state_seq_set_data_ext(ctx, saved[0], size[0], 0, LLAMA_STATE_SEQ_FLAGS_ON_DEVICE)", c)

    def test_the_checked_in_finding_exports_a_short_file(self):
        binary = ROOT / "build" / "fuzz" / "targets" / "llama_memory_differential"
        if not binary.is_file():
            self.skipTest(f"{binary} is not built (the fuzz lane decodes llama programs)")
        from lifeline import export, repro
        bug = repro.load(ROOT / "repro" / "llama-kv-seq-keep-other-streams")
        exporter = export.EXPORTERS["llama_memory_differential"]
        for rep in bug.reproducers:
            text = export.source_of(bug, rep, exporter)
            self.assertLessEqual(ggml_c.code_lines(text), 60)
            self.assertIn("llama_memory_seq_keep(mem, 0);", text)
            self.assertIn("cp.n_seq_max = 2, cp.n_ctx = 512", text)
            self.assertNotIn("LIFELINE", text)
        self.assertEqual(json.loads((bug.path / "bug.json").read_text())["reproducers"][0]["export"]["frame"], "check")



class FuzzLaneProgramVerbs(unittest.TestCase):
    """The fuzz lane's llama_memory_differential serves --program under libFuzzer (common/libfuzzer_program.h): what
    lifeline reduce and export run."""

    def setUp(self):
        self.binary = ROOT / "build" / "fuzz" / "targets" / "llama_memory_differential"
        if not self.binary.is_file():
            self.skipTest(f"{self.binary} is not built")

    def verb(self, *args):
        import subprocess
        return subprocess.run([str(self.binary), "--program", *map(str, args)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=120)

    def test_decode_encode_states_and_a_refusal(self):
        import tempfile
        from pathlib import Path
        seed = ROOT / "corpus" / "llama_memory_differential" / "per-sequence-streams"
        got = self.verb("decode", seed)
        self.assertEqual(got.returncode, 0, got.stderr)
        prog = json.loads(got.stdout)
        self.assertEqual((prog["format"], prog["kv_unified"]), ("llama", False))
        with tempfile.TemporaryDirectory() as tmp:
            src, out = Path(tmp) / "p.json", Path(tmp) / "p.bin"
            src.write_text(got.stdout)
            self.assertEqual(self.verb("encode", src, out).returncode, 0)
            self.assertEqual(out.read_bytes(), seed.read_bytes())
            prog["ops"][0]["op"] = "rewind"
            src.write_text(json.dumps(prog))
            refused = self.verb("encode", src, out)
            self.assertEqual(refused.returncode, 1)
            self.assertIn("op #0 (rewind): 'op' is \"rewind\", not a name this format knows", refused.stderr)
        states = self.verb("states", seed)
        self.assertEqual(states.returncode, 0)
        self.assertEqual(states.stdout.splitlines()[0], "decode\tkv/empty")
        self.assertEqual(self.verb("decode").returncode, 2)  # usage


if __name__ == "__main__":
    unittest.main()
