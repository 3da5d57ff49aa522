// Tokenises texts with the extension's grammars, as VS Code does (vscode-textmate on the
// Oniguruma engine), for tests/editors: reads [{name, scope, text}] as JSON on stdin and writes
// {name: [[[start, end, [scope, ...]], ...] per line]} as JSON on stdout. The grammars are the
// ones package.json contributes (the Markdown injection through its `injectTo`); the Markdown
// grammar they inject into is VS Code's own, from npm's tm-grammars.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const textmate = require("vscode-textmate");
const oniguruma = require("vscode-oniguruma");

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const contributed = manifest.contributes.grammars;
const paths = Object.fromEntries(contributed.map((g) => [g.scopeName, join(root, g.path)]));
paths["text.html.markdown"] = require.resolve("tm-grammars/grammars/markdown.json");

const wasm = readFileSync(require.resolve("vscode-oniguruma/release/onig.wasm")).buffer;
await oniguruma.loadWASM(wasm);

const registry = new textmate.Registry({
  onigLib: Promise.resolve({
    createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
    createOnigString: (text) => new oniguruma.OnigString(text),
  }),
  // any other language embedded in Markdown (```python) stays unknown, as without its extension
  loadGrammar: async (scope) =>
    paths[scope] ? textmate.parseRawGrammar(readFileSync(paths[scope], "utf8"), paths[scope]) : null,
  getInjections: (scope) =>
    contributed.filter((g) => (g.injectTo ?? []).includes(scope)).map((g) => g.scopeName),
});

const inputs = JSON.parse(readFileSync(0, "utf8"));
const grammars = {};
const out = {};
for (const { name, scope, text } of inputs) {
  grammars[scope] ??= await registry.loadGrammar(scope);
  let stack = textmate.INITIAL;
  out[name] = text.split(/\r?\n/).map((line) => {
    const result = grammars[scope].tokenizeLine(line, stack, 0);
    if (result.stoppedEarly) throw new Error(`${name}: a line took too long to tokenise`);
    stack = result.ruleStack;
    return result.tokens.map((t) => [t.startIndex, Math.min(t.endIndex, line.length), t.scopes]);
  });
}
process.stdout.write(JSON.stringify(out));
