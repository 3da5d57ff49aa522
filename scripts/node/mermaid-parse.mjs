// Parses each Mermaid file named on the command line with Mermaid itself (the library GitHub,
// GitLab and Gitea draw ```mermaid blocks with), in a jsdom window: one line per file, `ok` or
// `FAIL` and the parser's message; exit 1 when any fails (tests/codegen/diagrams/test_mermaid.py).
import fs from "node:fs";
import { JSDOM } from "jsdom";

const dom = new JSDOM("<!DOCTYPE html><body></body>");
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await import("mermaid");
mermaid.initialize({ startOnLoad: false });
let failed = 0;
for (const file of process.argv.slice(2)) {
  try {
    const parsed = await mermaid.parse(fs.readFileSync(file, "utf8"));
    console.log(`ok ${file} ${parsed.diagramType}`);
  } catch (error) {
    failed += 1;
    console.log(`FAIL ${file} ${String(error.message || error).replaceAll("\n", " ")}`);
  }
}
process.exit(failed ? 1 : 0);
