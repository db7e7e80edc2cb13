import type { ApprovalRules, ApprovalSettings } from "../config/types.js";

/** Something the agent is about to do in the sandbox, as the approval rules see it. */
export type AgentAction =
  /** A shell command (the `shell` agent's message, the `openai` agent's `terminal` call). */
  | { readonly kind: "command"; readonly command: string }
  /** The `openai` agent's `write_file` call. */
  | { readonly kind: "write"; readonly path: string; readonly bytes: number };

/** The workspace: writes below it never need approval under `writesOutsideWorkspace`. */
const Workspace = "/workspace";

/** Paths a command writes to without leaving anything behind. */
const Harmless = /^\/dev\/(null|stdout|stderr|fd\/\d+)$/;

/**
 * Programs that reach the network, by their name as the command's first word (after `sudo`,
 * `env`, a path), and URLs. A heuristic: `python -c 'urllib…'` passes unseen
 * (docs/approvals.md, "What the rules see").
 */
const NetworkPrograms = new Set([
  "curl",
  "wget",
  "nc",
  "ncat",
  "netcat",
  "socat",
  "ssh",
  "scp",
  "sftp",
  "rsync",
  "ftp",
  "telnet",
  "ping",
  "dig",
  "nslookup",
  "host",
  "apt",
  "apt-get",
  "apk",
  "pip",
  "pip3",
  "npm",
  "npx",
  "pnpm",
  "yarn",
  "gem",
  "cargo",
  "go",
  "git",
  "docker",
  "http",
  "aria2c",
]);
const NetworkText = /[a-z][a-z0-9+.-]*:\/\/|\/dev\/(tcp|udp)\//i;

/** Programs whose path arguments are written to (created, replaced, removed, changed). */
const WritingPrograms = new Set([
  "rm",
  "mv",
  "cp",
  "tee",
  "touch",
  "mkdir",
  "rmdir",
  "ln",
  "chmod",
  "chown",
  "chgrp",
  "dd",
  "install",
  "truncate",
  "sed",
  "unzip",
  "tar",
  "rsync",
  "shred",
  "patch",
]);

/** The simple commands of a command line, split at `;`, `&&`, `||`, `|`, `&` and newlines. */
function simpleCommands(line: string): string[][] {
  return line
    .split(/;|&&|\|\||\||&|\n|\$\(|`|\(|\)/)
    .map((part) =>
      part
        .trim()
        .split(/\s+/)
        .filter((word) => word !== "")
        .map((word) => word.replace(/^['"]|['"]$/g, "")),
    )
    .filter((words) => words.length > 0);
}

/** The program a simple command runs: its first word past `sudo`/`env`/assignments, basename. */
function programOf(words: readonly string[]): string | undefined {
  for (const word of words) {
    if (
      /^[A-Za-z_][A-Za-z0-9_]*=/.test(word) ||
      word === "sudo" ||
      word === "env" ||
      word === "exec"
    )
      continue;
    return word.slice(word.lastIndexOf("/") + 1);
  }
  return undefined;
}

function outsideWorkspace(path: string): boolean {
  if (path.startsWith("~")) return true;
  if (!path.startsWith("/")) return path.split("/").includes("..");
  if (Harmless.test(path)) return false;
  const normalized = path.replace(/\/+$/, "");
  if (normalized.split("/").includes("..")) return true;
  return normalized !== Workspace && !normalized.startsWith(`${Workspace}/`);
}

/** Whether a command line may write outside /workspace, as far as its words show. */
export function commandWritesOutside(line: string): boolean {
  const redirect = /(?:^|[^<>&])\d*>>?\|?\s*([^\s;&|]+)/g;
  for (const match of line.matchAll(redirect)) {
    const target = match[1]!.replace(/^['"]|['"]$/g, "");
    if (!target.startsWith("&") && outsideWorkspace(target)) return true;
  }
  for (const words of simpleCommands(line)) {
    const program = programOf(words);
    if (program === "cd") {
      const dir = words[words.indexOf("cd") + 1];
      if (dir === undefined || dir === "-" || outsideWorkspace(dir)) return true;
      continue;
    }
    if (program === undefined || !WritingPrograms.has(program)) continue;
    for (const word of words.slice(1)) {
      const value = word.startsWith("of=") ? word.slice(3) : word;
      if (value.startsWith("-")) continue;
      if (
        (value.startsWith("/") || value.startsWith("~") || value.includes("..")) &&
        outsideWorkspace(value)
      )
        return true;
    }
  }
  return false;
}

/** Whether a command line may use the network, as far as its words show. */
export function commandUsesNetwork(line: string): boolean {
  if (NetworkText.test(line)) return true;
  return simpleCommands(line).some((words) => {
    const program = programOf(words);
    return program !== undefined && NetworkPrograms.has(program);
  });
}

/** Compiled command patterns, once per rules object. */
const compiled = new WeakMap<ApprovalRules, RegExp[]>();
function patternsOf(rules: ApprovalRules): RegExp[] {
  let patterns = compiled.get(rules);
  if (patterns === undefined) {
    patterns = (rules.commands ?? []).map((source) => new RegExp(source, "i"));
    compiled.set(rules, patterns);
  }
  return patterns;
}

/**
 * Why `action` needs an approver's yes under `settings`, or `undefined` when it may run
 * (docs/approvals.md). The rules read the words of a command: they catch the agent doing
 * what it was asked to ask about, not someone who wants to slip past them (a command pattern
 * is not a security boundary; the sandbox is).
 */
export function approvalReason(
  action: AgentAction,
  settings: ApprovalSettings,
): string | undefined {
  const { ask } = settings;
  if (ask === "never") return undefined;
  if (ask === "always") return "every action needs approval";
  if (action.kind === "write") {
    const path = action.path.startsWith("/") ? action.path : `${Workspace}/${action.path}`;
    if (ask.writesOutsideWorkspace === true && outsideWorkspace(path))
      return "it writes outside /workspace";
    if (ask.filesOverBytes !== undefined && action.bytes > ask.filesOverBytes)
      return `it writes a file over ${ask.filesOverBytes} bytes`;
    return undefined;
  }
  const pattern = patternsOf(ask).find((p) => p.test(action.command));
  if (pattern !== undefined) return `it matches the pattern ${pattern.source}`;
  if (ask.writesOutsideWorkspace === true && commandWritesOutside(action.command))
    return "it may write outside /workspace";
  if (ask.network === true && commandUsesNetwork(action.command)) return "it may use the network";
  return undefined;
}

/** How an action is shown in the chat, cut to `maxChars`. */
export function describeAction(action: AgentAction, maxChars: number): string {
  const text =
    action.kind === "command"
      ? `$ ${action.command}`
      : `write ${action.path} (${action.bytes} bytes)`;
  return text.length <= maxChars ? text : `${text.slice(0, maxChars - 1)}…`;
}
