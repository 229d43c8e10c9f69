"""bench/dashboard.py and the tables bench/ prints: the committed bench/results/README.md is what the script writes
from the committed results; the newest result of a measure wins, in a dated folder too, and --older names the
superseded one; a result that records no provenance gets its commit from git across a move; and every derived
column (ratio, slowdown, share) equals the division of the two figures printed in its own row, in the dashboard and
in the tables of bench/throughput.py, bench/engine.py and bench/suite.py."""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from types import SimpleNamespace

from support import ROOT

sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "cli")]
import dashboard  # noqa: E402
import engine  # noqa: E402
import suite  # noqa: E402
import throughput  # noqa: E402

RESULTS = ROOT / "bench" / "results"
LINK = re.compile(r"\]\(([^)\s]+)\)")


def tables_of(text: str) -> list:
    """Every Markdown table of text as a list of rows, each a {header: cell} dict."""
    out, lines = [], text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|---") and i > 0 and lines[i - 1].startswith("|"):
            head = [c.strip() for c in lines[i - 1].strip("|").split("|")]
            rows = []
            for row in lines[i + 1:]:
                if not row.startswith("|"):
                    break
                rows.append(dict(zip(head, (c.strip() for c in row.strip("|").split("|")))))
            out.append(rows)
    return out


def number(cell: str) -> float:
    return float(cell.replace(",", "").split()[0].rstrip("x%"))


def ratio(num: str, den: str) -> str:
    return f"{number(num) / number(den):.2f}x"


class DerivedColumns(unittest.TestCase):
    """Each derived cell divides the figures printed in its own row."""

    def check_times(self, rows: list, derived: str, num: str, den: str):
        self.assertTrue(rows)
        for row in rows:
            with self.subTest(row=row):
                self.assertEqual(row[derived], ratio(row[num], row[den]))

    def test_throughput_against_divides_the_two_builds_exec_s_shown(self):
        # throughput-issue36.json's ggml_graph_topology: 491 exec/s in the ceiling's turns, 285 in the against
        # turns, 389 there. The first table printed 491 | 389 | 0.73x; 0.73 is 285 / 389.
        results = json.loads((RESULTS / "throughput-issue36.json").read_text())
        lines = throughput.table(results, [], "/else/build/fuzz", 2, 8, 256, "bench/throughput.py ...")
        rows = tables_of("\n".join(lines))[0]
        self.check_times(rows, "this / there", "this build, same turns", "against: exec/s there")
        ggml = next(r for r in rows if r["target"] == "ggml_graph_topology")
        self.assertEqual((ggml["exec/s"], ggml["against: exec/s there"], ggml["this build, same turns"],
                          ggml["this / there"]), ("491", "389", "285", "0.73x"))
        for row in rows:
            self.assertEqual(row["ratio"], f"{100 * number(row['exec/s']) / number(row['empty target']):.2f}%")

    def test_throughput_slowdown_divides_the_two_exec_s_in_its_brackets(self):
        results = json.loads((RESULTS / "throughput.json").read_text())
        names = ["asan", "fuzz", "lsan", "tsan"]
        rows = tables_of("\n".join(throughput.table(results, names, None, 2, 10, 256, "x")))[0]
        for row in rows:
            for n in names:
                cell = row[f"{n} slowdown"]
                if cell == "n/a":
                    continue
                m = re.fullmatch(r"(\S+) \(([\d,]+) / ([\d,]+) exec/s\)", cell)
                self.assertIsNotNone(m, cell)
                self.assertEqual(m.group(1), ratio(m.group(2), m.group(3)), cell)

    def test_replay_rate_against_the_first_target(self):
        results = [{"target": "a", "replay_exec_s": 224.0, "inputs": 10}, {"target": "b", "replay_exec_s": 113.4,
                                                                           "inputs": 10}]
        rows = tables_of("\n".join(throughput.replay_table(results, "c", 3, "x")))[0]
        self.assertEqual([r["vs a"] for r in rows], ["1.00x", ratio(rows[1]["inputs/s"], rows[0]["inputs/s"])])

    def test_engine_setting_against_the_first_setting(self):
        results = json.loads((RESULTS / "engine.json").read_text())
        args = SimpleNamespace(rounds=2, seconds=10, trials=10, budget=60)
        rows = tables_of("\n".join(engine.table(results, results[0]["settings"], args, "x")))[0]
        names = list(results[0]["settings"])
        for row in (r for r in rows if r["what"] == "exec/s"):
            for s in names:
                m = re.fullmatch(r"(\d+) \((\S+)\)", row[s])
                self.assertEqual(m.group(2), ratio(m.group(1), row[names[0]].split()[0]), row)

    def test_suite_busy_share_of_the_cpu_seconds_shown(self):
        result = {"command": "test", "fresh": False, "exit_status": 0, "wall_s": 800, "lanes": [],
                  "phases": [{"phase": "lane asan: build", "seconds": 300, "busy_cpu_s": 480.2, "idle_cpu_s": 119.8},
                             {"phase": "summary", "seconds": 1, "busy_cpu_s": 0.0, "idle_cpu_s": 0.0}]}
        rows = tables_of("\n".join(suite.table(result)))[-1]
        self.assertEqual(rows[0]["CPU busy %"], f"{100 * 480.2 / 600.0:.1f}%")
        self.assertEqual(rows[1]["CPU busy %"], "-")

    def test_the_committed_against_tables_divide_their_own_columns(self):
        tables = [p for p in RESULTS.rglob("throughput*.md") if "this / there" in p.read_text()]
        self.assertGreaterEqual(len(tables), 6)
        for p in tables:
            with self.subTest(table=p.name):
                rows = tables_of(p.read_text())[0]
                self.check_times(rows, "this / there", "this build, same turns", "against: exec/s there")

    def test_the_dashboard_divides_its_own_columns(self):
        page = (RESULTS / "README.md").read_text()
        checked = 0
        for row in (r for rows in tables_of(page) for r in rows):
            if "exec/s / empty target" in row:
                self.assertEqual(row["exec/s / empty target"],
                                 f"{100 * number(row['exec/s']) / number(row['empty target, exec/s']):.2f}%")
                checked += 1
            if "slowdown" in row:
                self.assertEqual(row["slowdown"], ratio(row["exec/s without sanitizers"], row["exec/s with it"]))
                checked += 1
            for cell in (v for k, v in row.items() if k.endswith(": lines") and v != "-"):
                m = re.fullmatch(r"(\S+)% \((\d+)/(\d+)\)", cell)
                self.assertEqual(f"{100 * int(m.group(2)) / int(m.group(3)):.1f}", m.group(1), cell)
                checked += 1
        self.assertGreater(checked, 60)


def write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def tte_result(bug: str, date: str, found: int, seconds: list, **extra) -> dict:
    rows = [{"result": "found" if i < found else "censored", "seconds": s} for i, s in enumerate(seconds)]
    return {"bug": bug, "target": "t", "mode": "reintroduced", "lane": "fuzz", "trials": len(rows), "found": found,
            "budget_s": 60, "median_s": seconds[0], "rmst_s": 1.0, "other_crashes": 0, "rows": rows, "date": date,
            **extra}


class Newest(unittest.TestCase):
    """Which result a row shows, and where its date and commit come from."""

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="dashboard-"))
        self.results = self.tmp / "bench" / "results"
        self.results.mkdir(parents=True)

    def tearDown(self):
        subprocess.run(["rm", "-rf", str(self.tmp)])

    def test_the_newest_result_wins_in_a_dated_folder_too(self):
        write(self.results / "tte-b-reintroduced.json",
              tte_result("b", "2026-11-20T10:00:00Z", 1, [5.0, 60.0], machine="2 x Old CPU", commit="aaaaaaa"))
        write(self.results / "2026-12-01" / "tte-b-reintroduced.json",
              tte_result("b", "2026-12-01T10:00:00Z", 2, [3.0, 4.5], machine="4 x New CPU", commit="bbbbbbb"))
        write(self.results / "2026-11-01" / "throughput.json",
              [{"target": "t", "exec_s": 900, "ceiling_exec_s": 90000, "rounds": 2, "runs_ended_by_crash": 0,
                "overhead": {"tsan": {"none_exec_s": 1000, "exec_s": 250}}, "date": "2026-11-01T00:00:00Z"}])
        write(self.results / "throughput-later.json",
              [{"target": "t", "exec_s": 1200, "ceiling_exec_s": 100000, "rounds": 2, "runs_ended_by_crash": 1,
                "overhead": {}, "date": "2026-11-02T00:00:00Z", "machine": "2 x Some CPU", "commit": "ccccccc"}])
        page = dashboard.render(self.results, self.tmp)
        rows = tables_of(page)
        tput, cost, tte = rows[0], rows[1], rows[3]
        self.assertEqual([(r["target"], r["exec/s"], r["exec/s / empty target"], r["date"], r["commit"])
                          for r in tput], [("t", "1200", "1.20%", "2026-11-02", "ccccccc")])
        # The sanitizer's cost is a measure of its own: the later run measured none, so the earlier one stays.
        self.assertEqual([(r["sanitizer build"], r["slowdown"], r["machine"], r["commit"]) for r in cost],
                         [("tsan", "4.00x", "not recorded", "not recorded")])
        self.assertIn("[2026-11-01/throughput.json](2026-11-01/throughput.json)", cost[0]["file"])
        self.assertEqual([(r["found"], r["median s"], r["last found s"], r["machine"], r["commit"]) for r in tte],
                         [("2/2", "3", "4.5", "4 x New CPU", "bbbbbbb")])
        self.assertIn("(2026-12-01/tte-b-reintroduced.json)", tte[0]["file"])

    def test_older_lists_a_superseded_result_at_the_top_with_its_dated_folder(self):
        write(self.results / "tte-b-reintroduced-first.json", tte_result("b", "2026-11-20T10:00:00Z", 1, [5.0]))
        write(self.results / "tte-b-reintroduced.json", tte_result("b", "2026-11-21T10:00:00Z", 1, [4.0]))
        (self.tmp / "docs").mkdir()
        (self.tmp / "docs" / "guide.md").write_text("as `tte-b-reintroduced-first.json` says\n")
        self.assertEqual(dashboard.older(self.results, self.tmp),
                         ["2026-11-20/ <- tte-b-reintroduced-first.json   (named in docs/guide.md)"])

    def test_a_result_without_provenance_takes_its_commit_from_git_across_a_move(self):
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
        subprocess.run(["git", "init", "-q", str(self.tmp)], check=True)
        old = tte_result("b", None, 1, [2.0])
        del old["date"]
        write(self.results / "tte-b-reintroduced.json", old)
        subprocess.run(git + ["add", "-A"], cwd=self.tmp, check=True)
        subprocess.run(git + ["commit", "-q", "-m", "run"], cwd=self.tmp, check=True,
                       env=dict(os.environ, GIT_AUTHOR_DATE="2026-11-20T10:00:00Z",
                                GIT_COMMITTER_DATE="2026-11-20T10:00:00Z"))
        first = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=self.tmp, stdout=subprocess.PIPE,
                               text=True).stdout.strip()
        (self.results / "2026-11-20").mkdir()
        subprocess.run(["git", "mv", "bench/results/tte-b-reintroduced.json", "bench/results/2026-11-20/"],
                       cwd=self.tmp, check=True)
        subprocess.run(git + ["commit", "-q", "-m", "move"], cwd=self.tmp, check=True)
        row = tables_of(dashboard.render(self.results, self.tmp))[3][0]
        self.assertEqual((row["date"], row["machine"], row["commit"]),
                         ("2026-11-20 (git)", "not recorded", f"{first} (git)"))


class Committed(unittest.TestCase):
    """The committed dashboard."""

    def test_the_committed_readme_is_what_the_script_writes(self):
        if dashboard.shallow(ROOT):
            # A shallow clone (actions/checkout's default) has no history to date the older results by, so none to
            # tell which is newest; the other tests here still check the committed page.
            self.skipTest("a shallow clone or no git checkout: the results before issue 64 are dated by git")
        have, want = (RESULTS / "README.md").read_text(), dashboard.render()
        self.assertEqual(have.splitlines(), want.splitlines(),
                         "bench/results/README.md is stale or edited by hand: run bench/dashboard.py")
        self.assertTrue(have.startswith("<!-- Generated by bench/dashboard.py"))

    def test_every_link_of_the_dashboard_resolves(self):
        page = (RESULTS / "README.md").read_text()
        links = LINK.findall(page)
        self.assertGreater(len(links), 50)
        for target in links:
            with self.subTest(link=target):
                self.assertTrue((RESULTS / target.split("#")[0]).exists(), target)

    def test_the_newest_result_of_each_measure_is_at_the_top(self):
        # Older runs go to dated folders; the one each row shows stays at the top of bench/results/.
        rows = [r for t in tables_of((RESULTS / "README.md").read_text()) for r in t if "file" in r]
        self.assertGreater(len(rows), 40)
        for row in rows:
            self.assertNotIn("/", LINK.search(row["file"]).group(1), row)


if __name__ == "__main__":
    unittest.main()
