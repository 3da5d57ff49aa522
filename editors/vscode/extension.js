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
  if (running) await running.stop();
}

async function restart() {
  await stop();
  await start();
}

async function activate(context) {
  context.subscriptions.push(
    vscode.commands.registerCommand("loom.server.restart", restart),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration("loom.server")) restart();
    }),
    vscode.workspace.onDidChangeWorkspaceFolders(() => restart()),
  );
  await start();
}

function deactivate() {
  return stop();
}

module.exports = { activate, deactivate };
