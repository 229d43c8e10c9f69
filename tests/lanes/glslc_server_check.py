#!/usr/bin/env python3
"""unit.ggml-vulkan.glslc-fork-server: the warm glslc of the shared shader build (cmake/ggml-vulkan/glslc_client.c
and glslc_fork_server.c) gives what glslc run directly gives: the same SPIR-V bytes, dependency file, exit status
and messages, for ggml's own shaders as vulkan-shaders-gen compiles them and for a shader that does not compile.
Among the shaders are tri_f16 and diag_f16, whose SPIR-V Debian's glslc takes a constant of from uninitialised
memory (glslc_fork_server.c says more): they came out different from a server that warmed up on its main thread.
The server library is loaded from a folder with blanks and quotes. Also: the client runs glslc itself, without
waiting, when the server cannot start; the server leaves when idle.

  glslc_server_check.py CLIENT SERVER_SO GLSLC SHADER_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# (name, source, arguments) as vulkan-shaders-gen passes them (vulkan-shaders-gen.cpp, string_to_spv).
VARIANTS = [
    ("tri_f16", "tri.comp", ["--target-env=vulkan1.2", "-O", "-DA_TYPE=float16_t", "-DD_TYPE=float16_t"]),
    ("diag_f16", "diag.comp", ["--target-env=vulkan1.2", "-O", "-DA_TYPE=float16_t", "-DD_TYPE=float16_t"]),
    ("exp_f32", "unary.comp", ["--target-env=vulkan1.2", "-O", "-DA_TYPE=float", "-DD_TYPE=float", "-DOP=op_exp"]),
    ("tri_f32_vk13", "tri.comp", ["--target-env=vulkan1.3", "-O", "-DA_TYPE=float", "-DD_TYPE=float"]),
    ("diag_f32_noopt", "diag.comp", ["--target-env=vulkan1.2", "-DA_TYPE=float", "-DD_TYPE=float"]),
]
BROKEN = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() { undeclared = 1; }\n"


def main(argv: list[str]) -> int:
    if len(argv) != 5:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    client, server_so, glslc, shader_dir = (Path(a).resolve() for a in argv[1:])
    for p in (client, server_so, glslc, shader_dir):
        if not p.exists():
            print(f"FAIL: {p} does not exist")
            return 1
    socket = f"lifeline-glslc-check-{os.getpid()}"
    base_env = dict(os.environ, LIFELINE_GLSLC_REAL=str(glslc), LIFELINE_GLSLC_PRELOAD=str(server_so),
                    LIFELINE_GLSLC_SOCKET=socket, LIFELINE_GLSLC_IDLE_S="1")
    base_env.pop("LIFELINE_GLSLC_DIRECT", None)
    failures: list[str] = []

    def compile_(work: Path, out: str, source: str, args: list[str], **env) -> subprocess.CompletedProcess:
        cmd = [str(client), "-fshader-stage=compute", args[0], source, "-o", out, *args[1:], "-MD", "-MF", out + ".d"]
        return subprocess.run(cmd, cwd=work, env=dict(base_env, **env), capture_output=True, text=True, timeout=60)

    with tempfile.TemporaryDirectory(prefix="lifeline glslc 'check' ") as tmp:  # a folder with blanks and quotes
        work = Path(tmp)
        for f in shader_dir.iterdir():
            if f.suffix in (".comp", ".glsl"):
                shutil.copy(f, work / f.name)
        (work / "broken.comp").write_text(BROKEN)
        # The server library from a folder with blanks, as in a checkout under "my projects" (LD_PRELOAD splits
        # at blanks; the client names it through LD_LIBRARY_PATH then).
        shutil.copy(server_so, work / server_so.name)
        base_env["LIFELINE_GLSLC_PRELOAD"] = str(work / server_so.name)
        for name, source, args in VARIANTS + [("broken", "broken.comp", ["--target-env=vulkan1.2", "-O"])]:
            direct = compile_(work, f"{name}.direct.spv", source, args, LIFELINE_GLSLC_DIRECT="1")
            served = compile_(work, f"{name}.served.spv", source, args)
            if name == "broken":
                if direct.returncode == 0 or "undeclared" not in direct.stderr:
                    failures.append(f"broken.comp: glslc itself did not fail on it ({direct.returncode}): {direct.stderr}")
                if (served.returncode, served.stdout, served.stderr) != (direct.returncode, direct.stdout, direct.stderr):
                    failures.append(f"broken.comp: through the server exit {served.returncode} and {served.stderr!r}, "
                                    f"glslc itself {direct.returncode} and {direct.stderr!r}")
                continue
            if direct.returncode != 0:
                failures.append(f"{name}: glslc itself failed ({direct.returncode}): {direct.stderr}")
                continue
            if served.returncode != 0 or served.stderr or served.stdout:
                failures.append(f"{name}: through the server exit {served.returncode}, output {served.stdout!r} "
                                f"{served.stderr!r}")
                continue
            a, b = (work / f"{name}.direct.spv").read_bytes(), (work / f"{name}.served.spv").read_bytes()
            if a != b:
                at = next(i for i in range(min(len(a), len(b)) + 1) if i == min(len(a), len(b)) or a[i] != b[i])
                failures.append(f"{name}: SPIR-V differs from glslc's at byte {at} ({len(b)} bytes, glslc {len(a)})")
                continue
            da = (work / f"{name}.direct.spv.d").read_text().replace(f"{name}.direct.spv", "OUT")
            db = (work / f"{name}.served.spv.d").read_text().replace(f"{name}.served.spv", "OUT")
            if da != db:
                failures.append(f"{name}: dependency file differs from glslc's:\n{db}\nglslc's:\n{da}")
            else:
                print(f"ok   {name}: {len(b)} bytes of SPIR-V and its dependency file, as glslc's")

        # The compiles above went through a server (a client that always ran glslc itself would pass the rest).
        if not servers(socket):
            failures.append("no server was running after the compiles: the client ran glslc itself every time")

        # A server that cannot start: the client runs glslc itself at once, not after its 5 s wait.
        t0 = time.monotonic()
        lost = compile_(work, "lost.spv", "tri.comp", VARIANTS[0][2], LIFELINE_GLSLC_PRELOAD=str(work / "no-such.so"),
                        LIFELINE_GLSLC_SOCKET=socket + "-none")
        took = time.monotonic() - t0
        if lost.returncode != 0 or (work / "lost.spv").read_bytes() != (work / "tri_f16.direct.spv").read_bytes():
            failures.append(f"no server: exit {lost.returncode}, {lost.stderr!r}, or SPIR-V not glslc's")
        elif took > 3:
            failures.append(f"no server: the client waited {took:.1f} s before running glslc itself")
        else:
            print(f"ok   with no server to start, glslc ran in the client ({took:.2f} s)")

    # The server leaves once idle (LIFELINE_GLSLC_IDLE_S=1 here).
    deadline = time.monotonic() + 10
    while servers(socket) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = servers(socket)
    if left:
        failures.append(f"the server (pid {', '.join(left)}) was still running 10 s after its last request")
    else:
        print("ok   the server left once idle")

    for f in failures:
        print(f"FAIL: {f}")
    return 1 if failures else 0


def servers(socket: str) -> list[str]:
    """The pids of processes whose environment names `socket` as the one they serve."""
    found = []
    needle = f"LIFELINE_GLSLC_SERVE={socket}\0".encode()
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if needle in Path(f"/proc/{pid}/environ").read_bytes():
                    found.append(pid)
            except OSError:
                pass
    return found


if __name__ == "__main__":
    sys.exit(main(sys.argv))
