"""Getting a lane ready: Debian packages, the pinned upstream ggml, configure and build (`test` and `fuzz`)."""
from __future__ import annotations

import os
import subprocess

from .paths import ROOT


def run(cmd, **kw) -> int:
    print("+ " + " ".join(str(c) for c in cmd), flush=True)
    return subprocess.call([str(c) for c in cmd], **kw)


def ensure_deps() -> None:
    rc = subprocess.call([str(ROOT / "scripts" / "install-deps.sh")])
    if rc != 0:
        raise SystemExit(f"lifeline: installing dependencies failed (scripts/install-deps.sh exited {rc})")


def ensure_upstream() -> None:
    """Fetches the pinned upstream ggml (scripts/fetch-ggml.sh) for the `upstream` tests and target. Without
    it (no network, npm missing) the lanes still build and those tests report themselves skipped."""
    script = ROOT / "scripts" / "fetch-ggml.sh"
    try:
        rc = subprocess.call([str(script)])
    except OSError as e:
        rc, why = 1, f"cannot run {script}: {e.strerror}"
    else:
        why = "see above"
    if rc != 0:
        print(f"lifeline: upstream ggml could not be fetched ({why}); the upstream tests will be reported as "
              "skipped and ggml_graph_topology not built", flush=True)


def configure_and_build(lane: str, targets: list | None = None) -> bool:
    """Configures the lane's preset and builds it: everything, or only `targets` (CMake target names)."""
    if run(["cmake", "--preset", lane], cwd=ROOT, stdout=subprocess.DEVNULL) != 0:
        print(f"lifeline: configuring lane {lane} failed; rerun `cmake --preset {lane}` to see why")
        return False
    only = ["--target", *targets] if targets else []
    return run(["cmake", "--build", "--preset", lane, "-j", str(os.cpu_count() or 2), *only], cwd=ROOT) == 0
