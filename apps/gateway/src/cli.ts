#!/usr/bin/env node
import { Command } from "commander";
import { runDoctor } from "./cli/doctor.js";
import { sandboxList, sandboxReap, sandboxRemove } from "./cli/sandbox-admin.js";
import { runStart } from "./cli/start.js";
import { packageVersion } from "./cli/version.js";
import { readEnv } from "./config/env.js";
import { secretsOfEnv } from "./config/secrets.js";
import { Redactor } from "./redact.js";

const env = readEnv();
/** Everything the CLI prints goes through it; loading the config teaches it the config's secrets. */
const redactor = new Redactor(secretsOfEnv(env));
const print = (line: string) => process.stdout.write(`${redactor.text(line)}\n`);

function fail(error: unknown): never {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`mediagate: ${redactor.text(message)}\n`);
  process.exit(1);
}

const program = new Command()
  .name("mediagate")
  .description("Chat gateway for an AI agent working in a Docker sandbox")
  .version(packageVersion(), "-V, --version", "print the version and exit")
  .showHelpAfterError();

program
  .command("start")
  .description("run every configured channel (the local console when no token is set)")
  .option("-c, --config <file>", "config file (default $MEDIAGATE_CONFIG, else embedded defaults)")
  .action(async (opts: { config?: string }) => {
    await runStart({ config: opts.config, env, redactor }).catch(fail);
    process.exit(0);
  });

program
  .command("doctor")
  .description("check the config, Docker reachability and the sandbox images")
  .option("-c, --config <file>", "config file")
  .action(async (opts: { config?: string }) => {
    process.exitCode = await runDoctor({ config: opts.config, env, redactor }, print).catch(fail);
  });

const sandbox = program.command("sandbox").description("manage this gateway's containers");
const sandboxOpts = (cmd: Command) =>
  cmd
    .option("-c, --config <file>", "config file")
    .option("-p, --profile <name>", "only this profile");

sandboxOpts(sandbox.command("ls").description("list containers")).action(
  async (opts: { config?: string; profile?: string }) => {
    process.exitCode = await sandboxList({ ...opts, env, redactor }, print).catch(fail);
  },
);
sandboxOpts(
  sandbox
    .command("rm")
    .argument("<id|slot>")
    .description("remove a container by id prefix or slot"),
).action(async (target: string, opts: { config?: string; profile?: string }) => {
  process.exitCode = await sandboxRemove(target, { ...opts, env, redactor }, print).catch(fail);
});
sandboxOpts(sandbox.command("reap").description("remove exited orphan containers now")).action(
  async (opts: { config?: string; profile?: string }) => {
    process.exitCode = await sandboxReap({ ...opts, env, redactor }, print).catch(fail);
  },
);

await program.parseAsync(process.argv);
