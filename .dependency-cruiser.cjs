/**
 * The import rules `pnpm check:imports` enforces over apps/ and packages/ (tests included):
 * no import cycle, and the package direction of docs/architecture.md. A workspace package is
 * matched both where it resolves (`packages/<name>/…`, through the workspace link) and by its
 * name (`@mediagate/<name>`, when its dist/ is not built yet).
 *
 * @type {import("dependency-cruiser").IConfiguration}
 */
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
