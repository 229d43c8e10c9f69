"""Configuring the asan lane on a scratch copy of repro/ (-DLIFELINE_REPRO_DIR): malformed bug.json files
register only their failing repro.<id>.bug-json, and every other test of the lane is registered as with the
pristine copy; a plan that cannot be made stops configuration with its message.

Beside the real folders, the copy holds one folder per JSON value of every type at every level of a bug.json
(json_mutations.py): configuration goes on, and each folder gets exactly the tests `lifeline repro-plan`
prints for it. A valid folder whose patch does not apply to this lane's ggml gets failing variant tests."""
import hashlib
import json
import re
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

from json_mutations import JSON_VALUES, mutations
from lifeline import plan
from support import TRIAGE, ROOT


def configure(build: Path, repro_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["cmake", "--preset", "asan", "-B", str(build), f"-DLIFELINE_REPRO_DIR={repro_dir}"],
                          cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def registered_tests(build: Path) -> list:
    out = subprocess.run(["ctest", "--test-dir", str(build), "--show-only=json-v1"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, check=True).stdout
    return [t["name"] for t in json.loads(out)["tests"]]


def run_ctest(build: Path, regex: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ctest", "--test-dir", str(build), "-R", regex, "-j2", "--output-on-failure"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def edit_bug_json(folder: Path, change) -> None:
    doc = json.loads((folder / "bug.json").read_text())
    change(doc)
    (folder / "bug.json").write_text(json.dumps(doc))


SIG = {"type": "heap-use-after-free", "frame": "F"}
DIFF = "--- a/src/ggml-alloc.c\n+++ b/src/ggml-alloc.c\n"
# An upstream-open bug (its id needs no switch) with every field bug.json has; mutated into mutant-<n>/.
MUTATED = {
    "id": "-", "title": "t", "upstream": ["x#1"], "target": "alloc_graph_topology", "status": "upstream-open", "triage": TRIAGE,
    "reproducers": [{"input": "in", "expect": {"asan": SIG, "valgrind": SIG}, "env": {"UBSAN_OPTIONS": "x=1"}}],
    "upstream_variant": {"target": "ggml_graph_topology", "source": "ggml 0.25.1", "patch": "upstream/p.patch",
                         "reproducers": [{"input": "variant-in", "expect": {"asan": SIG}}]},
}


def write_folder(d: Path, doc) -> None:
    (d / "upstream").mkdir(parents=True)
    (d / "upstream" / "p.patch").write_text(DIFF)
    for name in ("in", "variant-in", *(v for v in JSON_VALUES if isinstance(v, str) and v.strip() and "\0" not in v
                                       and v not in (".", ".."))):
        (d / name).write_text(DIFF)  # any string names a file: an input or a patch
    (d / "bug.json").write_text(json.dumps(doc))


def planned_tests(line: str) -> list:
    """The test names CMake registers for one line of `lifeline repro-plan --lane asan`."""
    _, bug_id, _, _, modes, _, _, vmodes = line.split("|")
    names = [f"repro.{bug_id}.bug-json"]
    names += [f"repro.{bug_id}.asan.{m}" for m in modes.split(",") if modes != "-"]
    names += [f"repro.{bug_id}.upstream.asan.{m}" for m in vmodes.split(",") if vmodes != "-"]
    return sorted(names)


@unittest.skipUnless(shutil.which("cmake") and shutil.which("ctest") and shutil.which("ninja"), "needs cmake and ninja")
class ConfigureWithMalformedBugJson(unittest.TestCase):
    # folder -> its defect; each folder's lane tests must go, its bug-json test stay and fail.
    DEFECTS = {
        "wasm-lang-dangling": lambda d: d["reproducers"][0].update(expect=["asan"]),
        "igl-capture-retains-buffers": lambda d: d.update(reproducers={}),
        "gallocr-view-leaf-offset": lambda d: d.update(upstream_variant=3),
    }

    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="lifeline-configure-"))
        cls.repro = cls.tmp / "repro"
        cls.build = cls.tmp / "build"
        shutil.copytree(ROOT / "repro", cls.repro)
        cfg = configure(cls.build, cls.repro)
        assert cfg.returncode == 0, cfg.stdout
        cls.pristine = registered_tests(cls.build)
        for folder, change in cls.DEFECTS.items():
            edit_bug_json(cls.repro / folder, change)
        (cls.repro / "not-json").mkdir()
        (cls.repro / "not-json" / "bug.json").write_text('{"id": "not-json",')
        (cls.repro / "no-bug-json").mkdir()
        cls.mutants = {}
        for n, (at, value, doc) in enumerate(mutations(MUTATED)):
            name = f"mutant-{n}"
            if isinstance(doc, dict) and at != ("id",):
                doc = dict(doc, id=name)
            write_folder(cls.repro / name, doc)
            cls.mutants[name] = (at, value)
        missing = dict(MUTATED, id="patch-touches-a-missing-file", upstream_variant=dict(
            MUTATED["upstream_variant"], patch="missing.patch"))
        write_folder(cls.repro / missing["id"], missing)
        (cls.repro / missing["id"] / "missing.patch").write_text("--- a/src/no-such.c\n+++ b/src/no-such.c\n")
        cls.cfg = configure(cls.build, cls.repro)
        cls.malformed = registered_tests(cls.build) if cls.cfg.returncode == 0 else []
        cls.plan = {line.split("|")[1]: line for line in plan.plan(cls.repro, "asan")}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def test_configuration_goes_on(self):
        self.assertEqual(self.cfg.returncode, 0, self.cfg.stdout)

    def test_every_other_test_is_registered(self):
        self.assertIn("repro.wasm-lang-dangling.asan.reintroduced", self.pristine)  # the copy is the real repro/
        self.assertIn("repro.gallocr-view-leaf-offset.upstream.asan.fixed", self.pristine)
        gone = [n for n in self.pristine
                if any(n.startswith(f"repro.{f}.") for f in self.DEFECTS) and not n.endswith(".bug-json")]
        self.assertEqual(len(gone), 10, gone)  # asan fixed and reintroduced of each, and the two variants' two each
        expected = [n for n in self.pristine if n not in gone]
        added = ("repro.not-json.bug-json", "repro.no-bug-json.bug-json")
        self.assertEqual([n for n in self.malformed if n not in added
                          and not re.match(r"repro\.(mutant-\d+|patch-touches-a-missing-file)\.", n)], expected)

    def test_each_malformed_folder_has_its_bug_json_test(self):
        for folder in (*self.DEFECTS, "not-json", "no-bug-json"):
            with self.subTest(folder):
                self.assertIn(f"repro.{folder}.bug-json", self.malformed)
                self.assertEqual([n for n in self.malformed if n.startswith(f"repro.{folder}.")],
                                 [f"repro.{folder}.bug-json"])

    def test_any_json_type_at_any_level_gets_the_planned_tests(self):
        statuses = set()
        for name, (at, value) in self.mutants.items():
            with self.subTest(folder=name, at=at, value=value):
                statuses.add(self.plan[name].split("|")[2])
                self.assertEqual(sorted(n for n in self.malformed if n.startswith(f"repro.{name}.")),
                                 planned_tests(self.plan[name]))
        self.assertEqual(statuses, {"invalid", "upstream-open"})

    def test_bug_json_tests_fail_naming_the_problem(self):
        proc = run_ctest(self.build, r"^repro\.wasm-lang-dangling\.bug-json$")
        self.assertNotEqual(proc.returncode, 0, proc.stdout)
        self.assertIn("wasm-lang-dangling/bug.json: reproducers[0]: 'expect' must be a non-empty dict", proc.stdout)
        # Every value at one level (the variant's patch): the invalid ones fail, the valid one passes.
        patch_values = {n for n, (at, _) in self.mutants.items() if at == ("upstream_variant", "patch")}
        proc = run_ctest(self.build, r"^repro\.(" + "|".join(sorted(patch_values)) + r")\.bug-json$")
        failed = set(re.findall(r"Test +#\d+: repro\.(mutant-\d+)\.bug-json \.+\*+Failed", proc.stdout))
        invalid = {n for n in patch_values if self.plan[n].split("|")[2] == "invalid"}
        self.assertEqual(failed, invalid, proc.stdout)
        self.assertEqual(len(patch_values - invalid), 2, proc.stdout)  # "x" and "-x": plain names of a diff

    def test_a_patch_this_ggml_lacks_fails_its_variant_tests_only(self):
        bug = "patch-touches-a-missing-file"
        self.assertEqual(sorted(n for n in self.malformed if n.startswith(f"repro.{bug}.")),
                         [f"repro.{bug}.asan.pinned", f"repro.{bug}.bug-json",
                          f"repro.{bug}.upstream.asan.fixed", f"repro.{bug}.upstream.asan.reintroduced"])
        proc = run_ctest(self.build, rf"^repro\.{bug}\.upstream\.")
        self.assertNotEqual(proc.returncode, 0, proc.stdout)
        self.assertIn("2 tests failed out of 2", proc.stdout)
        self.assertIn(f"missing.patch: patches src/no-such.c, which", proc.stdout)

    def test_a_failing_plan_stops_configuration(self):
        build = self.tmp / "build-no-repro"
        cfg = configure(build, self.tmp / "nonexistent")
        self.assertNotEqual(cfg.returncode, 0, cfg.stdout)
        text = " ".join(cfg.stdout.split())  # CMake re-flows the message
        self.assertIn("so the reproducer tests cannot be registered", text)
        self.assertIn(f"repro root '{self.tmp / 'nonexistent'}' is not a directory", text)


if __name__ == "__main__":
    unittest.main()


@unittest.skipUnless(shutil.which("cmake") and shutil.which("ctest") and shutil.which("ninja"), "needs cmake and ninja")
class ConfigureWithoutTorchOnAnotherGgml(unittest.TestCase):
    """One asan configuration (no build) as if python3-torch were not installed, from a ggml source other than the
    pinned one (`--ggml-source`; here a link to the pinned tree, which CMake takes as another source)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="lifeline-configure-"))
        cls.build = cls.tmp / "build"
        cls.ggml = cls.tmp / "my ggml"
        cls.ggml.symlink_to(ROOT / "build" / "upstream" / "llama.cpp" / "ggml")
        cfg = subprocess.run(["cmake", "--preset", "asan", "-B", str(cls.build), "-DLIFELINE_WITHOUT_TORCH=ON",
                              f"-DLIFELINE_GGML_SOURCE_DIR={cls.ggml}"],
                             cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        cls.cfg = cfg
        # The other source's ggml-vulkan shaders get their own shared folder (cmake/LifelineGgml.cmake): configured,
        # never built, here; removed with the rest.
        cls.vk_shared = ROOT / "build" / "upstream" / ("ggml-vulkan-" + hashlib.md5(str(cls.ggml).encode()).hexdigest()[:12])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)
        shutil.rmtree(cls.vk_shared, ignore_errors=True)

    def setUp(self):
        self.assertEqual(self.cfg.returncode, 0, self.cfg.stdout)

    def test_torch_tests_are_skipped_with_the_reason(self):
        build = self.build
        names = registered_tests(build)
        torch_tests = [n for n in names if ("torch" in n or ".upstream." in n and "turbine" in n)
                       and not n.endswith(".bug-json") and not n.startswith("unit.python.")]
        self.assertIn("corpus.torch_capsule_lifecycle", torch_tests)
        self.assertIn("repro.torch-dlpack-neg-bit-ignored.asan.pinned", torch_tests)
        self.assertIn("repro.turbine-capsule-rename-back.upstream.asan.reintroduced", torch_tests)
        run = subprocess.run(["ctest", "--test-dir", str(build), "-R", "torch|turbine-capsule-rename-back\\.upstream",
                              "-E", "^unit\\.python\\.", "-V"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        skipped = re.findall(r"\*\*\*Skipped", run.stdout)
        self.assertEqual(len(skipped), len(torch_tests), run.stdout)
        self.assertIn("cannot import torch: python3-torch is not installed", run.stdout)
        self.assertNotIn("Passed", "\n".join(l for l in run.stdout.splitlines() if "Test #" in l and "bug-json" not in l))

    def test_another_ggml_source_is_named_and_its_pinned_checks_may_skip(self):
        info = dict(line.partition(" ")[::2] for line in (self.build / "upstream-ggml.txt").read_text().splitlines())
        self.assertEqual((info["source"], info["pinned"]), (str(self.ggml), "0"))
        self.assertEqual(info["targets"].split(), ["ggml_graph_topology", "ggml_vulkan_graph_topology"])
        out = subprocess.run(["ctest", "--test-dir", str(self.build), "--show-only=json-v1"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, check=True).stdout
        tests = {t["name"]: t for t in json.loads(out)["tests"]}
        source = f"ggml {info['version']} from {self.ggml}"

        def other_source(name):
            cmd = tests[name]["command"]
            props = {p["name"]: p["value"] for p in tests[name].get("properties", [])}
            given = cmd[cmd.index("--other-source") + 1] if "--other-source" in cmd else None
            return given, props.get("SKIP_RETURN_CODE")

        for name in ("repro.ggml-gallocr-leaf-records-unchecked.asan.pinned",
                     "repro.ggml-sched-inplace-writer-backend.asan.pinned",
                     "repro.ggml-gallocr-leaf-records-unchecked.asan.export"):
            with self.subTest(name=name):
                self.assertEqual(other_source(name), (source, 77))
        # Checks that do not run the pinned upstream's finding keep failing as they always do.
        for name in ("repro.ggml-gallocr-leaf-records-unchecked.asan.guarded",
                     "repro.gallocr-view-leaf-offset.asan.reintroduced"):
            with self.subTest(name=name):
                self.assertEqual(other_source(name), (None, None))
        # torch is not ggml (here its tests are the skipped stand-ins of a build without torch).
        self.assertIsNone(other_source("repro.torch-dlpack-neg-bit-ignored.asan.pinned")[0])


@unittest.skipUnless(shutil.which("cmake") and shutil.which("ctest") and shutil.which("ninja"), "needs cmake and ninja")
class ConfigureGgmlTreesThatCannotBuildATarget(unittest.TestCase):
    """Configurations (no build) of the asan lane from ggml trees where a target cannot build: the lane configures,
    the target is listed in skipped-targets.txt with why, and its tests are registered as skipped with that reason
    (never failed, never dropped). A tree without src/ggml-cpu/ (ggml before late 2024), and a tree whose ggml-vulkan
    needs a build-compat patch that does not apply to it (a link farm of the pinned tree, its ggml-vulkan.cpp edited
    where layer-settings.patch mends it)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="lifeline-configure-"))
        cls.old = cls.tmp / "old ggml"
        (cls.old / "src").mkdir(parents=True)
        (cls.old / "src" / "ggml-alloc.c").write_text("")
        (cls.old / "CMakeLists.txt").write_text("project(ggml C)\n")
        cls.odd = cls.tmp / "odd ggml"
        pinned = ROOT / "build" / "upstream" / "llama.cpp" / "ggml"
        subprocess.run(["cp", "-rs", str(pinned), str(cls.odd)], check=True)
        vk = cls.odd / "src" / "ggml-vulkan" / "ggml-vulkan.cpp"
        text = vk.read_text()
        vk.unlink()
        vk.write_text(text.replace("VkBool32 enable_best_practice = layer_settings;",
                                   "VkBool32 enable_best_practice = layer_settings != 0;"))
        cls.vk_shared = ROOT / "build" / "upstream" / ("ggml-vulkan-" + hashlib.md5(str(cls.odd).encode()).hexdigest()[:12])
        cls.builds = {}
        for name, tree in (("old", cls.old), ("odd", cls.odd)):
            build = cls.tmp / f"build-{name}"
            cfg = subprocess.run(["cmake", "--preset", "asan", "-B", str(build), f"-DLIFELINE_GGML_SOURCE_DIR={tree}"],
                                 cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            cls.builds[name] = (build, cfg)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)
        shutil.rmtree(cls.vk_shared, ignore_errors=True)

    def skipped(self, name):
        build, cfg = self.builds[name]
        self.assertEqual(cfg.returncode, 0, cfg.stdout)
        return dict(line.split(": ", 1) for line in (build / "skipped-targets.txt").read_text().splitlines())

    def test_a_tree_without_the_cpu_backend_library_skips_both_ggml_targets(self):
        skipped = self.skipped("old")
        self.assertEqual(sorted(skipped), ["ggml_graph_topology", "ggml_vulkan_graph_topology"])
        self.assertIn(f"{self.old} has no src/ggml-cpu/", skipped["ggml_graph_topology"])
        build = self.builds["old"][0]
        run = run_ctest(build, r"^(corpus\.ggml_graph_topology|repro\.ggml-gallocr-leaf-records-unchecked\.asan\.pinned)$")
        self.assertEqual(run.returncode, 0, run.stdout)
        self.assertEqual(len(re.findall(r"\*\*\*Skipped", run.stdout)), 2, run.stdout)

    def test_a_vulkan_backend_whose_compat_patch_does_not_apply_skips_that_target_only(self):
        skipped = self.skipped("odd")
        self.assertEqual(list(skipped), ["ggml_vulkan_graph_topology"])
        self.assertIn("cmake/ggml-vulkan/compat/layer-settings.patch, which this tree needs", skipped["ggml_vulkan_graph_topology"])
        self.assertIn("does not apply", skipped["ggml_vulkan_graph_topology"])
        build = self.builds["odd"][0]
        self.assertIn("ggml_graph_topology", (build / "fuzz-targets.txt").read_text())
        run = subprocess.run(["ctest", "--test-dir", str(build), "-R", r"^corpus\.ggml_vulkan_graph_topology$", "-V"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertEqual(run.returncode, 0, run.stdout)
        self.assertIn("***Skipped", run.stdout)
        self.assertIn("SKIPPED: ggml-vulkan of", run.stdout)
        self.assertIn("layer-settings.patch", run.stdout)
