// The client: starts `loom lsp` (the command from server.js) for the `.loom` files of the
// workspace and restarts it when its settings change or on `Loom: Restart the language server`.
"use strict";
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");
const { serverCommand } = require("./server");

let client;

function workspaceFolders() {
  return (vscode.workspace.workspaceFolders ?? [])
    .filter((f) => f.uri.scheme === "file")
    .map((f) => f.uri.fsPath);
}

async function start() {
  // the server is a program of the workspace (its .venv) or of its settings: run it only once the
  // workspace is trusted (highlighting needs no server)
  if (!vscode.workspace.isTrusted) return;
  const settings = vscode.workspace.getConfiguration("loom.server");
  const { command, args, cwd } = serverCommand({
    configured: settings.get("path", ""),
    args: settings.get("args", ["lsp"]),
    folders: workspaceFolders(),
  });
  client = new LanguageClient(
    "loom",
    "Loom",
    { command, args, options: cwd ? { cwd } : {} },
    {
      documentSelector: [
        { scheme: "file", language: "loom" },
        { scheme: "untitled", language: "loom" },
      ],
      // a model is a folder of files: the server hears of the ones that change on disk too
      synchronize: { fileEvents: vscode.workspace.createFileSystemWatcher("**/*.loom") },
    },
  );
  try {
    await client.start();
  } catch (err) {
    client = undefined;
    const action = "Open settings";
    const answer = await vscode.window.showErrorMessage(
      `Loom: the language server did not start (\`${[command, ...args].join(" ")}\`: ${err.message}). ` +
        "Install Loom in the workspace's .venv, or set loom.server.path.",
      action,
    );
    if (answer === action) {
      await vscode.commands.executeCommand("workbench.action.openSettings", "loom.server");
    }
  }
}

async function stop() {
  const running = client;
  client = undefined;
  try {
    if (running) await running.stop();
  } catch {
    // a server that already exited has nothing left to stop
  }
}

// one start or stop at a time: a settings change and the restart command may come together
let queue = Promise.resolve();
function restart() {
  queue = queue.then(stop).then(start, start);
  return queue;
}

async function activate(context) {
  context.subscriptions.push(
    vscode.commands.registerCommand("loom.server.restart", restart),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration("loom.server")) restart();
    }),
    vscode.workspace.onDidChangeWorkspaceFolders(() => restart()),
    vscode.workspace.onDidGrantWorkspaceTrust(() => restart()),
  );
  await restart();
}

function deactivate() {
  queue = queue.then(stop, stop);
  return queue;
}

module.exports = { activate, deactivate };
