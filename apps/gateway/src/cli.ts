#!/usr/bin/env node
import { Command, InvalidArgumentError } from "commander";
import { parseDurationSeconds } from "./cli/duration.js";
import { CliOutput } from "./cli/output.js";
import { packageVersion } from "./cli/version.js";
import { readEnv } from "./config/env.js";
import { secretsOfEnv } from "./config/secrets.js";
import { Redactor } from "./redact.js";

const env = readEnv();
/** Everything the CLI prints goes through it; loading the config teaches it the config's secrets. */
const redactor = new Redactor(secretsOfEnv(env));
/**
 * The commands' stdout and stderr, made at their first line: `start` never asks for them, so
 * its console chat and logs keep their own handling of a stream that fails.
 */
let outputs: { stdout: CliOutput; stderr: CliOutput } | undefined;
function output(): { stdout: CliOutput; stderr: CliOutput } {
  if (outputs !== undefined) return outputs;
  const stderr = new CliOutput(process.stderr, () => {});
  const stdout = new CliOutput(process.stdout, (error) =>
    stderr.write(
      `mediagate: could not write the output (${error.code ?? error.message}): the rest of it is lost; the command goes on and exits 1\n`,
    ),
  );
  // Output that was lost makes the run fail, whatever exit code the command chose.
  process.on("exit", () => {
    if (stdout.lost !== undefined) process.exitCode = 1;
  });
  outputs = { stdout, stderr };
  return outputs;
}
const print = (line: string) => output().stdout.write(`${redactor.text(line)}\n`);

function fail(error: unknown): never {
  const message = error instanceof Error ? error.message : String(error);
  output().stderr.write(`mediagate: ${redactor.text(message)}\n`);
  process.exit(1);
}

// Each command loads its modules when it runs, so `--help` and a mistyped option answer at
// once instead of after loading every chat client.
const program = new Command()
  .name("mediagate")
  .description("Chat gateway for an AI agent working in a Docker sandbox")
  .version(packageVersion(), "-V, --version", "print the version and exit")
  .showHelpAfterError()
  .addHelpText(
    "after",
    examples([
      ["mediagate start --config mediagate.yaml", "run the gateway"],
      ["mediagate doctor --config mediagate.yaml", "check the config, tokens, engine and image"],
      ["mediagate sandbox ls", "list this install's containers"],
      ["mediagate pairing list", "codes waiting for approval (access: pairing)"],
      ["mediagate help sandbox reap", "options and examples of one command"],
    ]),
  );

program
  .command("start")
  .description("run every configured channel (the local console when no token is set)")
  .option("-c, --config <file>", "config file (default $MEDIAGATE_CONFIG, else embedded defaults)")
  .addHelpText(
    "after",
    examples([
      ["mediagate start", "no config file: the embedded defaults, chat on the console"],
      ["mediagate start --config /etc/mediagate/mediagate.yaml", "the bots of that file"],
      [
        "MEDIAGATE_CONFIG=mediagate.yaml mediagate start",
        "the same file, named in the environment",
      ],
    ]),
  )
  .action(async (opts: { config?: string }) => {
    const { runStart } = await import("./cli/start.js");
    await runStart({ config: opts.config, env, redactor }).catch(fail);
    process.exit(0);
  });

program
  .command("doctor")
  .description("check config, homes, Docker, images, bot tokens and the agent endpoint")
  .option("-c, --config <file>", "config file")
  .addHelpText(
    "after",
    examples([
      ["mediagate doctor --config mediagate.yaml", "a line per check; exit 1 when one fails"],
    ]),
  )
  .action(async (opts: { config?: string }) => {
    const { runDoctor } = await import("./cli/doctor.js");
    process.exitCode = await runDoctor({ config: opts.config, env, redactor }, print).catch(fail);
  });

const sandbox = program
  .command("sandbox")
  .description("manage this install's containers (those of its root home only)")
  .addHelpText(
    "after",
    examples([
      ["mediagate sandbox ls", "list them"],
      ["mediagate sandbox rm profile:work", "remove a slot's container (its files stay)"],
      ["mediagate sandbox reap --older-than 30m", "remove orphans now"],
    ]),
  );
const sandboxOpts = (cmd: Command) =>
  cmd
    .option("-c, --config <file>", "config file")
    .option("-p, --profile <name>", "only this profile (an unknown name is an error)");

sandboxOpts(sandbox.command("ls").description("list containers, a header row then one per line"))
  .addHelpText(
    "after",
    examples([
      ["mediagate sandbox ls", "every profile's containers"],
      ["mediagate sandbox ls -p work --config mediagate.yaml", "only profile work's"],
    ]),
  )
  .action(async (opts: { config?: string; profile?: string }) => {
    const { sandboxList } = await import("./cli/sandbox-admin.js");
    process.exitCode = await sandboxList({ ...opts, env, redactor }, print).catch(fail);
  });

sandboxOpts(
  sandbox
    .command("rm")
    .argument("<id|slot>", "a container id or its prefix, a container name, or a slot key")
    .description("remove a container by id prefix or slot (its files stay)"),
)
  .addHelpText(
    "after",
    examples([
      ["mediagate sandbox rm 3f2a9c1b7d4e", "by id prefix, as `sandbox ls` shows it"],
      ["mediagate sandbox rm profile:work -p work", "the persistent container of profile work"],
    ]),
  )
  .action(async (target: string, opts: { config?: string; profile?: string }) => {
    const { sandboxRemove } = await import("./cli/sandbox-admin.js");
    process.exitCode = await sandboxRemove(target, { ...opts, env, redactor }, print).catch(fail);
  });

sandboxOpts(
  sandbox
    .command("reap")
    .description(
      "remove orphans now: exited containers older than a minimum age, and containers whose gateway process is gone",
    )
    .option(
      "--older-than <duration>",
      "minimum age of an exited container, 1m to 3650d (default: twice the profile's lifetimeSeconds, at least 2m)",
      durationSeconds,
    ),
)
  .addHelpText(
    "after",
    examples([
      ["mediagate sandbox reap", "the default age; each profile's first line names it"],
      ["mediagate sandbox reap --older-than 2h -p work", "profile work's, exited over 2 hours ago"],
    ]),
  )
  .action(async (opts: { config?: string; profile?: string; olderThan?: number }) => {
    const { olderThan, ...rest } = opts;
    const options = { ...rest, olderThanSeconds: olderThan, env, redactor };
    const { sandboxReap } = await import("./cli/sandbox-admin.js");
    process.exitCode = await sandboxReap(options, print).catch(fail);
  });

const pairing = program
  .command("pairing")
  .description(
    "users who asked for access with a one-time code (profiles with access: pairing; docs/security.md)",
  )
  .addHelpText(
    "after",
    examples([
      ["mediagate pairing list", "pending codes and approved users"],
      ["mediagate pairing approve ABCD-EFGH", "let the user who got this code in"],
      ["mediagate pairing revoke telegram:123456", "take an approval (and a pending code) back"],
    ]),
  );
const pairingOpts = (cmd: Command) =>
  cmd
    .option("-c, --config <file>", "config file")
    .option("-p, --profile <name>", "only this profile (an unknown name is an error)");

pairingOpts(
  pairing
    .command("list")
    .description("pending codes and approved users, a header row then one per line"),
)
  .addHelpText(
    "after",
    examples([
      ["mediagate pairing list", "every profile's"],
      ["mediagate pairing list -p work --config mediagate.yaml", "only profile work's"],
    ]),
  )
  .action(async (opts: { config?: string; profile?: string }) => {
    const { pairingList } = await import("./cli/pairing.js");
    process.exitCode = await pairingList({ ...opts, env, redactor }, print).catch(fail);
  });

pairingOpts(
  pairing
    .command("approve")
    .argument("<code>", "the code the user got in a direct message (case and dashes ignored)")
    .description("approve the user of a pending code: they may then use the bot (not as an admin)"),
)
  .addHelpText(
    "after",
    examples([["mediagate pairing approve abcd-efgh -p work", "in profile work"]]),
  )
  .action(async (code: string, opts: { config?: string; profile?: string }) => {
    const { pairingApprove } = await import("./cli/pairing.js");
    process.exitCode = await pairingApprove(code, { ...opts, env, redactor }, print).catch(fail);
  });

pairingOpts(
  pairing
    .command("revoke")
    .argument("<user|code>", 'a user id ("telegram:123456", "discord:…") or a pending code')
    .description("remove an approved user and their pending code, or one pending code"),
)
  .addHelpText(
    "after",
    examples([
      ["mediagate pairing revoke telegram:123456", "they get a new code when they write again"],
      ["mediagate pairing revoke ABCD-EFGH", "drop a pending code"],
    ]),
  )
  .action(async (target: string, opts: { config?: string; profile?: string }) => {
    const { pairingRevoke } = await import("./cli/pairing.js");
    process.exitCode = await pairingRevoke(target, { ...opts, env, redactor }, print).catch(fail);
  });

program
  .command("usage")
  .description(
    "model calls, tokens and cost per profile and user: today (UTC), 7 days, all time (docs/models-and-usage.md)",
  )
  .option("-c, --config <file>", "config file")
  .option("-p, --profile <name>", "only this profile (an unknown name is an error)")
  .addHelpText(
    "after",
    examples([
      ["mediagate usage", "every profile's, a header row then one line per user and period"],
      ["mediagate usage -p work", "only profile work's"],
    ]),
  )
  .action(async (opts: { config?: string; profile?: string }) => {
    const { usageReport } = await import("./cli/usage.js");
    process.exitCode = await usageReport({ ...opts, env, redactor }, print).catch(fail);
  });

const db = program
  .command("db")
  .description("the install's SQLite databases: the journal and each profile's state")
  .addHelpText(
    "after",
    examples([
      [
        "mediagate db move-aside ~/.mediagate/journal.db",
        "a damaged journal, as the error named it",
      ],
    ]),
  );

db.command("move-aside")
  .argument("<file>", "the damaged journal.db or state.db, as the error line named it")
  .description(
    "move a damaged database and its -wal/-shm aside to <file>.damaged-<time> (kept), refused while a process has it open; the next start makes a new, empty one",
  )
  .option("--force", "move it even when this host cannot tell who has it open (no /proc)")
  .addHelpText(
    "after",
    examples([
      [
        "mediagate db move-aside /var/lib/mediagate/journal.db",
        "loses unanswered messages and the outbox's waiting replies",
      ],
      [
        "mediagate db move-aside /var/lib/mediagate/profiles/work/state.db",
        "loses profile work's conversations and pairing approvals",
      ],
    ]),
  )
  .action(async (file: string, opts: { force?: boolean }) => {
    const { moveAside } = await import("./cli/move-aside.js");
    process.exitCode = await moveAside(file, { force: opts.force }, print).catch(fail);
  });

program
  .command("status")
  .description(
    "the replicas of the cluster (docs/cluster.md): id, host, version, sessions, heartbeat",
  )
  .option("-c, --config <file>", "config file (its store: names the cluster's database)")
  .addHelpText(
    "after",
    examples([["mediagate status --config mediagate.yaml", "a header row, then one per replica"]]),
  )
  .action(async (opts: { config?: string }) => {
    const { clusterStatus } = await import("./cli/cluster-status.js");
    process.exitCode = await clusterStatus({ config: opts.config, env, redactor }, print).catch(
      fail,
    );
  });

const store = program
  .command("store")
  .description("where the journal and the profiles' state live (docs/store.md)")
  .addHelpText(
    "after",
    examples([
      [
        "mediagate store migrate --from sqlite",
        "move a stopped SQLite install's state into the PostgreSQL database of the config's store",
      ],
    ]),
  );

store
  .command("migrate")
  .description(
    "move each profile's state (sessions, conversations, approvals, pairing, usage) from its state.db into PostgreSQL while the gateway is stopped; running it twice gives the same result",
  )
  .option("-c, --config <file>", "config file")
  .requiredOption("--from <kind>", "where from: sqlite")
  .option(
    "--to <url>",
    "postgres://user:password@host:5432/database (default: the config's store.url; a URL given here shows in the host's process list, password and all)",
  )
  .option("--replace", "overwrite a profile whose PostgreSQL state is newer than its file")
  .option("--force", "go on when this host cannot tell who has the files open (no /proc)")
  .addHelpText(
    "after",
    examples([
      [
        "mediagate store migrate --from sqlite",
        "after `systemctl stop mediagate` and setting store: { kind: postgres } with its url, before the next start",
      ],
    ]),
  )
  .action(
    async (opts: {
      config?: string;
      from: string;
      to?: string;
      replace?: boolean;
      force?: boolean;
    }) => {
      if (opts.to !== undefined) redactor.add([opts.to]);
      const { migrateStore } = await import("./cli/store-migrate.js");
      process.exitCode = await migrateStore({ ...opts, env, redactor }, print).catch(fail);
    },
  );

const web = program
  .command("web")
  .description("the web console (docs/web-console.md)")
  .addHelpText("after", examples([["mediagate web token", "print the console's login token"]]));

web
  .command("token")
  .description(
    "print the web console's login token (made, owner-only, in the root home if there is none yet)",
  )
  .option("-c, --config <file>", "config file (its home holds the token)")
  .addHelpText(
    "after",
    examples([
      ["mediagate web token", "the token of the install at $MEDIAGATE_HOME (or ~/.mediagate)"],
      ["mediagate web token --config mediagate.yaml", "the token of that file's home"],
    ]),
  )
  .action(async (opts: { config?: string }) => {
    const { webToken } = await import("./cli/web-token.js");
    // The one place the token is shown: straight to stdout, never through a log.
    output().stdout.write(
      `${await webToken({ config: opts.config, env, redactor }).catch(fail)}\n`,
    );
  });

/** The "Examples:" section of a command's `--help`: each command line with what it does. */
function examples(lines: readonly (readonly [string, string])[]): string {
  const width = Math.max(...lines.map(([example]) => example.length));
  const body = lines.map(([example, what]) => `  $ ${example.padEnd(width)}  # ${what}`);
  return `\nExamples:\n${body.join("\n")}`;
}

/** Parses a duration option; commander reports a bad one as an invalid argument (exit 1). */
function durationSeconds(text: string): number {
  try {
    return parseDurationSeconds(text);
  } catch (error) {
    throw new InvalidArgumentError(error instanceof Error ? error.message : String(error));
  }
}

await program.parseAsync(process.argv);
