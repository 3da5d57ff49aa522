// Which `loom` starts the language server. No `vscode` here, so plain Node runs it in the tests
// (tests/editors/test_vscode.py).
"use strict";
const fs = require("node:fs");
const path = require("node:path");

/** The workspace's own Loom: what `python3 -m venv .venv && pip install loom` leaves in a folder. */
function venvLoom(folder, platform) {
  return platform === "win32"
    ? path.join(folder, ".venv", "Scripts", "loom.exe")
    : path.join(folder, ".venv", "bin", "loom");
}

/**
 * The command and arguments that start the server.
 * - `configured` (the `loom.server.path` setting): used as given when it is a bare command name
 *   (found on PATH) or an absolute path; `${workspaceFolder}` in it, and a relative path, are taken
 *   from the first workspace folder.
 * - unset: the first workspace folder with a `.venv` holding `loom`, else `loom` on PATH.
 */
function serverCommand({ configured, args, folders, platform = process.platform }) {
  const first = folders[0];
  let command = (configured ?? "").trim();
  if (command) {
    if (first !== undefined) command = command.split("${workspaceFolder}").join(first);
    const bare = !command.includes("/") && !command.includes(path.sep);
    if (!bare && !path.isAbsolute(command) && first !== undefined) {
      command = path.resolve(first, command);
    }
  } else {
    command = folders.map((f) => venvLoom(f, platform)).find((p) => fs.existsSync(p)) ?? "loom";
  }
  return { command, args: args && args.length ? [...args] : ["lsp"], cwd: first };
}

module.exports = { serverCommand };
