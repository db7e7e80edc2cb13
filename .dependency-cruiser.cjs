/**
 * The import rules `pnpm check:imports` enforces over apps/ and packages/: no import cycle
 * (tests included), the package direction, and the direction between the gateway's rooms
 * (apps/gateway/src/*), all as docs/architecture.md draws them. A workspace package is
 * matched both where it resolves (`packages/<name>/…`, through the workspace link) and by its
 * name (`@mediagate/<name>`, when its dist/ is not built yet).
 */

const { existsSync, realpathSync } = require("node:fs");
const { createRequire } = require("node:module");
const { join } = require("node:path");

/**
 * The rules read TypeScript through the compiler's JS API (`tsPreCompilationDeps`), which
 * TypeScript 7 (the native compiler the build runs) no longer has. Without a TypeScript it can
 * load, dependency-cruiser quietly cruises only the JavaScript it finds and reports no
 * violation, so this fails first; pnpm-workspace.yaml gives it a TypeScript 5 of its own. The
 * package is looked for where Node looks from here, then from the working directory
 * (import-rules.test.ts loads a copy of this file from a directory of its own).
 */
const cruiserTypescript = (() => {
  const cruiser = [__dirname, process.cwd()]
    .flatMap((dir) => createRequire(join(dir, "x.js")).resolve.paths("dependency-cruiser") ?? [])
    .map((modules) => join(modules, "dependency-cruiser"))
    .find((dir) => existsSync(dir));
  if (cruiser === undefined) return undefined;
  try {
    return createRequire(join(realpathSync(cruiser), "package.json"))("typescript").version;
  } catch {
    return undefined;
  }
})();
if (cruiserTypescript === undefined || Number(cruiserTypescript.split(".")[0]) >= 7) {
  throw new Error(
    `dependency-cruiser needs TypeScript 2 to 6 to read the sources and found ${cruiserTypescript ?? "none"}: ` +
      "run pnpm install (pnpm-workspace.yaml's packageExtensions give it one)",
  );
}

const Src = "^apps/gateway/src/";
/** Tests may drive any part of the gateway; the room rules judge the code they test. */
const Tests = "\\.test\\.ts$";
/**
 * Where the gateway is put together: gateway.ts (the Gateway class), index.ts (the package's
 * exports), cli.ts and cli/ (the command line). The files gateway.ts is split into join here.
 */
const Composition = `${Src}(gateway\\.ts|gateway/|index\\.ts|cli\\.ts|cli/)`;
/** The shared modules at the root: they import no room. */
const Shared = `${Src}(defaults|log|log-levels|redact|printable|error-causes|error-summary)\\.ts$`;
/** The contract every channel implements and the core talks to. */
const ChannelContract = `${Src}channels/types\\.ts$`;
/** The rooms below the pipeline: they never know who calls them. */
const Storage = `${Src}(sqlite|postgres|state|durable|session|delivery)/`;
/** Every room but the composition, the channels and config/: the platform-free core. */
const Core = `${Src}(access-control|agents|commands|delivery|durable|health|pipeline|postgres|profiles|sandbox-access|session|sqlite|state|turn-progress|web)/`;

/** @type {import("dependency-cruiser").IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment:
        "An import cycle: modules that need each other cannot be read, tested or loaded alone. " +
        "Move what both need to a module of its own, or pass it in (docs/architecture.md).",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    {
      name: "packages-never-import-the-gateway",
      comment:
        "apps/gateway depends on the packages, never the other way (docs/architecture.md): " +
        "a package defines an interface and the gateway implements it.",
      severity: "error",
      from: { path: "^packages/" },
      to: { path: ["^apps/gateway/", "^@mediagate/gateway($|/)"] },
    },
    {
      name: "packages-import-only-io",
      comment:
        "media, sandbox and web import nothing of ours but @mediagate/io (docs/architecture.md).",
      severity: "error",
      from: { path: "^packages/([^/]+)/", pathNot: "^packages/io/" },
      to: {
        path: ["^packages/[^/]+/", "^@mediagate/"],
        pathNot: [
          "^packages/$1/",
          "^packages/io/",
          "^@mediagate/io($|/)",
          "^@mediagate/gateway($|/)",
        ],
      },
    },
    {
      name: "io-imports-nothing-of-ours",
      comment: "@mediagate/io is the bottom of the graph: it imports no workspace package.",
      severity: "error",
      from: { path: "^packages/io/" },
      to: { path: ["^packages/(?!io/)", "^@mediagate/"] },
    },
    {
      name: "gateway-shared-modules-import-no-room",
      comment:
        "defaults.ts, log.ts, redact.ts, printable.ts, error-causes.ts and error-summary.ts are " +
        "imported from every room: one of them importing a room ties the whole gateway to it " +
        "(docs/architecture.md).",
      severity: "error",
      from: { path: Shared },
      to: { path: `${Src}[^/]+/` },
    },
    {
      name: "gateway-nothing-imports-the-composition",
      comment:
        "gateway.ts, index.ts and cli/ put the rooms together; no room imports them back " +
        "(docs/architecture.md). Pass what a room needs in instead.",
      severity: "error",
      from: { path: Src, pathNot: [Composition, Tests] },
      to: { path: Composition },
    },
    {
      name: "gateway-channels-know-no-core",
      comment:
        "A channel translates one platform to the ChannelAdapter contract (channels/types.ts); " +
        "the pipeline calls it, never the other way (docs/architecture.md). Channels may use " +
        "the command grammar, delivery helpers, journal step keys, config and the access rule.",
      severity: "error",
      from: { path: `${Src}channels/`, pathNot: Tests },
      to: {
        path: `${Src}(pipeline|session|agents|profiles|sandbox-access|turn-progress|web|health|state|sqlite|cli)/|${Src}(gateway|index|cli)\\.ts$`,
      },
    },
    {
      name: "gateway-core-knows-only-the-channel-contract",
      comment:
        "The core knows no platform: of channels/ it imports the contract (channels/types.ts) " +
        "and the console's /attach usage line that /help shows (docs/architecture.md).",
      severity: "error",
      from: { path: Core, pathNot: Tests },
      to: {
        path: `${Src}channels/`,
        pathNot: [ChannelContract, `${Src}channels/console-attach\\.ts$`],
      },
    },
    {
      name: "gateway-pipeline-steps-stay-inside",
      comment:
        "The pipeline's steps are composed in pipeline/pipeline.ts and started by the " +
        "composition; other rooms see only pipeline/types.ts (the message context and services) " +
        "and pipeline/step-error.ts (docs/architecture.md).",
      severity: "error",
      from: { path: Src, pathNot: [`${Src}pipeline/`, Composition, Tests] },
      to: {
        path: `${Src}pipeline/`,
        pathNot: `${Src}pipeline/(types|step-error)\\.ts$`,
      },
    },
    {
      name: "gateway-storage-knows-no-callers",
      comment:
        "sqlite/, state/, durable/, session/ and delivery/ sit below the pipeline, the commands " +
        "and the channels: they import only one another, the channel contract and the shared " +
        "modules (docs/architecture.md).",
      severity: "error",
      from: { path: Storage, pathNot: Tests },
      to: { path: Src, pathNot: [Storage, ChannelContract, Shared] },
    },
    {
      name: "gateway-config-loads-light",
      comment:
        "Every CLI command, `--help` too, loads the config's schema: it takes the sandbox's " +
        "constants from its light subpaths (`@mediagate/sandbox/defaults`, `/mount-points`), " +
        "not the package with dockerode, the web console's host check from " +
        "`@mediagate/web/hosts`, not the package with fastify, and the log levels from " +
        "log-levels.ts, not log.ts with pino (half of `mediagate --help`'s CPU before).",
      severity: "error",
      from: { path: `${Src}config/`, pathNot: Tests },
      to: {
        path: [
          "^packages/(sandbox|web)/(src|dist)/index\\.[jt]s$",
          "^@mediagate/(sandbox|web)$",
          `${Src}log\\.ts$`,
        ],
        dependencyTypesNot: ["type-only"],
      },
    },
    {
      name: "gateway-storage-loads-light",
      comment:
        "The pairing, usage and store commands load the storage (sqlite/, state/, durable/, " +
        "session/, delivery/): it takes the sandbox's instance id from " +
        "`@mediagate/sandbox/instance`, not the package with dockerode, and nothing of the " +
        "web console's package with fastify (about half of `mediagate pairing list`'s CPU " +
        "before).",
      severity: "error",
      from: { path: Storage, pathNot: Tests },
      to: {
        path: ["^packages/(sandbox|web)/(src|dist)/index\\.[jt]s$", "^@mediagate/(sandbox|web)$"],
        dependencyTypesNot: ["type-only"],
      },
    },
    {
      name: "no-async-local-storage",
      comment:
        "No production module imports node:async_hooks: on Node 20 one AsyncLocalStorage in " +
        "use runs promise hooks for every promise of the process, 8–17 % of the gateway's CPU " +
        "per text-only answer (bench/README.md, issue 31, target 3). Carry a turn's identity " +
        'by value (docs/sessions.md, "Turns"); tests may use it.',
      severity: "error",
      from: { path: "^(apps|packages)/[^/]+/src/", pathNot: Tests },
      to: { dependencyTypes: ["core"], path: "^(node:)?async_hooks$" },
    },
  ],
  options: {
    doNotFollow: { path: ["(^|/)node_modules/", "(^|/)dist/"] },
    exclude: { path: ["(^|/)node_modules/", "(^|/)\\.turbo/"] },
    // `import type` counts: a cycle of types still ties the modules' meaning together.
    tsPreCompilationDeps: true,
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "node", "default"],
    },
  },
};
