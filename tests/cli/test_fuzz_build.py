"""`lifeline fuzz TARGET` builds that target and what it needs, not the whole lane; a target the configuration
skipped on this source is named with its reason; a failed build ends with one line naming the fuzz targets that
did not build and those that did. Run on the scratch project with a stand-in `cmake` first on PATH, which records
its arguments and builds what its script says (no lane is configured or compiled)."""
import json
import os
import unittest

from scratch_project import ScratchProject

# cmake as lifeline runs it: `--preset LANE ...` configures (writes the lane's fuzz-targets.txt and
# skipped-targets.txt from fake-cmake.json), `--build --preset LANE [--target T...] -- -k 0` builds (fails when a
# target named in "fail" is asked for, or, without --target, when "fail" names any).
FAKE_CMAKE = r"""#!/usr/bin/python3
import json, os, sys
here = os.path.dirname(os.path.realpath(__file__))
cfg = json.load(open(os.path.join(here, "fake-cmake.json")))
with open(os.path.join(here, "fake-cmake.log"), "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\n")
args = sys.argv[1:]
lane = args[args.index("--preset") + 1]
build = os.path.join(cfg["root"], "build", lane)
if args[0] == "--preset":
    os.makedirs(build, exist_ok=True)
    open(os.path.join(build, "fuzz-targets.txt"), "w").write("".join(t + " upstream\n" for t in cfg["targets"]))
    open(os.path.join(build, "skipped-targets.txt"), "w").write("".join(f"{t}: {why}\n" for t, why in cfg["skipped"].items()))
    sys.exit(0)
asked = (args[args.index("--target") + 1:args.index("--") if "--" in args else len(args)] if "--target" in args
         else cfg["targets"])
for t in asked:
    if t in cfg["fail"]:
        print(f"FAILED: {t}.o\nerror: use of undeclared identifier 'ggml_frobnicate'")
sys.exit(1 if set(asked) & set(cfg["fail"]) else 0)
"""


class FuzzBuild(ScratchProject):
    def setUp(self):
        super().setUp()
        for script in ("install-deps.sh", "fetch-ggml.sh", "fetch-whisper.sh"):
            f = self.root / "scripts" / script
            f.parent.mkdir(exist_ok=True)
            f.write_text("#!/bin/sh\nexit 0\n")
            f.chmod(0o755)
        self.bin = self.tmp / "bin"
        self.bin.mkdir()
        (self.bin / "cmake").write_text(FAKE_CMAKE)
        (self.bin / "cmake").chmod(0o755)
        (self.root / "targets" / "other_target.cc").write_text("")
        self.env = dict(os.environ, PATH=f"{self.bin}:{os.environ['PATH']}")

    def configure(self, fail=(), skipped=None):
        (self.bin / "fake-cmake.json").write_text(json.dumps({
            "root": str(self.root), "targets": ["fake_target", "other_target"], "fail": list(fail),
            "skipped": skipped or {}}))

    def builds(self):
        calls = [json.loads(line) for line in (self.bin / "fake-cmake.log").read_text().splitlines()]
        return [c for c in calls if c[0] == "--build"]

    def test_a_named_target_is_built_alone(self):
        self.configure()
        rc, text = self.cli("fuzz", "fake_target", "--time", "1", "--out", self.tmp / "o", env=self.env)
        self.assertEqual(rc, 0, text)
        self.assertEqual(self.builds(), [["--build", "--preset", "fuzz", "-j", str(os.cpu_count() or 2),
                                          "--target", "fake_target", "--", "-k", "0"]])

    def test_without_a_target_the_lane_is_built(self):
        self.configure()
        self.cli("fuzz", "--time", "1", "--out", self.tmp / "o", env=self.env)
        self.assertNotIn("--target", self.builds()[0])

    def test_a_target_skipped_on_this_source_is_named_with_why(self):
        self.configure(skipped={"fake_target": "ggml-vulkan of /src/ggml: compat/layer-settings.patch does not apply"})
        rc, text = self.cli("fuzz", "fake_target", "--time", "1", "--out", self.tmp / "o", env=self.env)
        self.assertEqual(rc, 1, text)
        self.assertIn("lifeline fuzz: target fake_target is not built in lane fuzz on this source: ggml-vulkan of "
                      "/src/ggml: compat/layer-settings.patch does not apply\n", text)
        self.assertEqual(self.builds(), [])

    def test_a_failed_build_says_what_failed_and_what_built(self):
        self.configure(fail=["other_target"])
        rc, text = self.cli("fuzz", "--time", "1", "--out", self.tmp / "o", env=self.env)
        self.assertEqual(rc, 1, text)
        last = text.strip().splitlines()[-1]
        self.assertEqual(last, "lifeline fuzz: building lane fuzz failed for fuzz target(s) other_target (the "
                               "compiler's errors are above); built: fake_target (`./lifeline fuzz fake_target "
                               "--no-build` fuzzes them)")
        self.assertIn("error: use of undeclared identifier 'ggml_frobnicate'", text)
        # Then each fuzz target alone, to tell which built.
        self.assertEqual([c[4] for c in self.builds()[1:]], ["fake_target", "other_target"])


if __name__ == "__main__":
    unittest.main()
