"""Configuring the asan lane on a scratch copy of repro/ (-DLIFELINE_REPRO_DIR): malformed bug.json files
register only their failing repro.<id>.bug-json, and every other test of the lane is registered as with the
pristine copy; a plan that cannot be made stops configuration with its message."""
import json
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

from support import ROOT


def configure(build: Path, repro_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["cmake", "--preset", "asan", "-B", str(build), f"-DLIFELINE_REPRO_DIR={repro_dir}"],
                          cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def registered_tests(build: Path) -> list:
    out = subprocess.run(["ctest", "--test-dir", str(build), "--show-only=json-v1"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, check=True).stdout
    return [t["name"] for t in json.loads(out)["tests"]]


def edit_bug_json(folder: Path, change) -> None:
    doc = json.loads((folder / "bug.json").read_text())
    change(doc)
    (folder / "bug.json").write_text(json.dumps(doc))


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
        cls.cfg = configure(cls.build, cls.repro)
        cls.malformed = registered_tests(cls.build) if cls.cfg.returncode == 0 else []

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
        self.assertEqual(len(gone), 8, gone)  # asan fixed and reintroduced of each, and the variant's two
        expected = [n for n in self.pristine if n not in gone]
        added = ("repro.not-json.bug-json", "repro.no-bug-json.bug-json")
        self.assertEqual([n for n in self.malformed if n not in added], expected)

    def test_each_malformed_folder_has_its_bug_json_test(self):
        for folder in (*self.DEFECTS, "not-json", "no-bug-json"):
            with self.subTest(folder):
                self.assertIn(f"repro.{folder}.bug-json", self.malformed)
                self.assertEqual([n for n in self.malformed if n.startswith(f"repro.{folder}.")],
                                 [f"repro.{folder}.bug-json"])

    def test_bug_json_tests_fail_naming_the_problem(self):
        proc = subprocess.run(["ctest", "--test-dir", str(self.build), "-R", r"^repro\.wasm-lang-dangling\.bug-json$",
                               "--output-on-failure"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertNotEqual(proc.returncode, 0, proc.stdout)
        self.assertIn("wasm-lang-dangling/bug.json: reproducers[0]: 'expect' must be a non-empty dict", proc.stdout)

    def test_a_failing_plan_stops_configuration(self):
        build = self.tmp / "build-no-repro"
        cfg = configure(build, self.tmp / "nonexistent")
        self.assertNotEqual(cfg.returncode, 0, cfg.stdout)
        text = " ".join(cfg.stdout.split())  # CMake re-flows the message
        self.assertIn("so the reproducer tests cannot be registered", text)
        self.assertIn(f"repro root '{self.tmp / 'nonexistent'}' is not a directory", text)


if __name__ == "__main__":
    unittest.main()
