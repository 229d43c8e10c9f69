"""What a libFuzzer job did, read from its output line by line (plain or fork mode): the inputs it ran, its exec/s,
coverage and corpus size, for `lifeline fuzz` and bench/tte.py."""
from __future__ import annotations

import re

_STATUS = re.compile(r"^#(\d+)\s+(\w+)\s+cov: (\d+) ft: (\d+) corp: (\d+)/\S+.*?exec/s: (\d+)")
# Fork mode, one line per finished job (compiler-rt FuzzerFork.cpp): "#<runs of every job so far>: cov: 56
# ft: 78 corp: 9 exec/s 100 oom/timeout/crash: 0/0/1 time: 12s job: 3 dft_time: 0"; its corp counts the
# seeds the first merge kept plus what the jobs added, its exec/s is the finished job's alone (0 for a job
# that crashed within its first second), its time the seconds since the fork-mode process started.
_FORK_STATUS = re.compile(r"^#(\d+): cov: (\d+) ft: (\d+) corp: (\d+) exec/s:? (\d+)"
                          r"(?: oom/timeout/crash: (\d+)/(\d+)/(\d+) time: (\d+)s)?")
_FINAL = re.compile(r"^stat::(number_of_executed_units|average_exec_per_sec):\s+(\d+)")


class JobLog:
    """The figures of one libFuzzer job, from its output fed line by line (plain or fork mode).

    execs: the final stats' number_of_executed_units, else the last progress line's count (fork mode prints
    only those: the sum over its finished jobs). exec/s: libFuzzer's average when it gives one (the final
    stats of a plain job, when not 0), else execs / elapsed: fork mode's progress lines carry one job's rate
    only, so there it is always the total over libFuzzer's own elapsed time. corpus: libFuzzer's corpus
    size from the last progress line (the seeds it kept plus what it added; the working corpus folder holds
    only the added ones), None when it printed none."""

    def __init__(self):
        self.fork = False
        self.execs = 0
        self.cov = 0
        self.corpus = None
        self.rate = 0                # the last plain progress line's exec/s
        self.final_execs = None
        self.final_rate = None
        self.fork_seconds = None     # fork mode: the last line's time
        self.fork_crashes = None     # fork mode: (ooms, timeouts, crashes) its jobs ended with
        self.unmerged_execs = 0      # fork mode: inputs of a crashed job whose log it printed

    def feed(self, line: str) -> bool:
        """Takes one line of output; whether it was a progress line."""
        m = _STATUS.match(line)
        if m:
            self.execs, self.cov, self.corpus, self.rate = (int(m.group(i)) for i in (1, 3, 5, 6))
            return True
        m = _FORK_STATUS.match(line)
        if m:
            self.fork = True
            self.execs, self.cov, self.corpus = (int(m.group(i)) for i in (1, 2, 4))
            if m.group(9) is not None:
                self.fork_crashes = tuple(int(m.group(i)) for i in (6, 7, 8))
                self.fork_seconds = int(m.group(9))
            return True
        if line.startswith("INFO: -fork="):
            self.fork = True
            return False
        f = _FINAL.match(line)
        if f and f.group(1) == "number_of_executed_units" and self.fork:
            # Fork mode prints a child's stats only inside the log of the crash it stops on (without
            # -ignore_crashes); that job's inputs are in no progress line.
            self.unmerged_execs += int(f.group(2))
        elif f and f.group(1) == "number_of_executed_units":
            self.final_execs = int(f.group(2))
        elif f and not self.fork:
            self.final_rate = int(f.group(2))
        return False

    def absorb(self, later: "JobLog") -> None:
        """Takes in the figures of a fork-mode job that went on where this one stopped: the inputs of both, the
        coverage and corpus where the later one ended, exec/s over the whole time (exec_per_s)."""
        self.final_execs = self.total_execs() + later.total_execs()
        self.cov = max(self.cov, later.cov)
        if later.corpus is not None:
            self.corpus = later.corpus
        self.fork, self.fork_seconds, self.final_rate = True, None, None

    def total_execs(self) -> int:
        return self.final_execs if self.final_execs is not None else self.execs + self.unmerged_execs

    def exec_per_s(self, elapsed: float) -> float:
        """Inputs a second over the job; `elapsed`: its wall time, for when libFuzzer gives no better one. Under
        10 a second, libFuzzer's whole-number rate says little (whisper_string_handoff's is 0): execs over the
        time instead, with one decimal."""
        execs = self.total_execs()
        if not self.fork and self.final_rate and self.final_rate >= 10:
            return self.final_rate
        if not self.fork and self.final_execs is None and self.rate and self.rate >= 10:
            return self.rate  # stopped before its final stats: its last progress line's rate
        seconds = self.fork_seconds if self.fork and self.fork_seconds else elapsed
        if not execs or seconds <= 0:
            return 0
        rate = execs / seconds
        return round(rate, 1) if rate < 10 else round(rate)


def executed_units(text: str) -> int:
    """How many inputs a libFuzzer job ran, from its output: its final stats, else its last progress line
    (a fork-mode job prints only those)."""
    log = JobLog()
    for line in text.splitlines():
        log.feed(line)
    return log.total_execs()
