import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { closedPort } from "../../../../test-support/net.js";
import { tempDirForTest } from "../../../../test-support/temp-dir.js";
import { emptyEnv } from "../config/env.js";
import { Redactor } from "../redact.js";
import { ClusterStatusError, clusterStatus } from "./cluster-status.js";

describe("mediagate status", () => {
  it("fails on stderr, not in its output, when the database does not answer, with no password", async () => {
    const dir = await tempDirForTest("mg-status-");
    const config = join(dir, "mediagate.yaml");
    const port = await closedPort();
    await writeFile(
      config,
      `home: ${dir}\nstore:\n  kind: postgres\n  url: postgres://mg:pw-status-9@127.0.0.1:${port}/mg\n`,
    );
    const redactor = new Redactor();
    const printed: string[] = [];
    const failed = await clusterStatus({ config, env: emptyEnv(dir), redactor }, (line) =>
      printed.push(line),
    ).catch((error: unknown) => error);
    expect(printed).toEqual([]);
    expect(failed).toBeInstanceOf(ClusterStatusError);
    expect(failed).toMatchObject({ code: "MG_CLI_STATUS_FAILED" });
    const message = redactor.text((failed as Error).message);
    expect(message).toMatch(/^could not read the cluster of PostgreSQL 127\.0\.0\.1:\d+\/mg: /);
    expect(message).not.toContain("pw-status-9");
  });
});
