import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../../test-support/wait.js";
import { dockerOf } from "../src/docker-client.js";
import { connectDocker, Defaults, LabelKeys } from "../src/index.js";
import {
  runThrowaway,
  type ThrowawayKind,
  ThrowawayKinds,
  type ThrowawaySpec,
} from "../src/throwaway-container.js";
import { docker, type Fixture, fixture, TestImage } from "./helpers.js";
import { startWedgedDaemon, type WedgedDaemon } from "./wedged-daemon.js";

let daemon: WedgedDaemon | undefined;
let fx: Fixture;
beforeAll(async () => {
  fx = await fixture();
});
afterEach(async () => {
  await daemon?.close();
  daemon = undefined;
});
afterAll(async () => {
  await fx.dispose();
});

const kinds = Object.keys(ThrowawayKinds) as ThrowawayKind[];

function job(kind: ThrowawayKind, script: string): ThrowawaySpec {
  return {
    kind,
    image: TestImage,
    entrypoint: ["sh", "-c"],
    cmd: [script],
    user: "0:0",
    capAdd: [],
    memoryBytes: Defaults.outsideKillMemoryBytes,
    runTimeoutMs: Defaults.operationTimeoutMs,
    job: "test job",
  };
}

/** The fixture's throwaway containers of `kind`, in any state. */
async function leftOf(kind: ThrowawayKind): Promise<string[]> {
  const label = [`${ThrowawayKinds[kind].label}=1`, `${LabelKeys.profile}=${fx.profile}`];
  const listed = await docker.listContainers({ all: true, filters: { label } });
  return listed.map((c) => c.Id);
}

describe("a throwaway container", () => {
  it.each(kinds)(
    "of kind %s is removed by its name when its create got no answer",
    async (kind) => {
      daemon = await startWedgedDaemon(["POST /containers/create"]);
      const wedged = dockerOf(connectDocker({ host: daemon.host }));
      const error = await runThrowaway(
        { docker: wedged, owner: fx.owner, bound: { timeoutMs: 200 } },
        job(kind, "true"),
      ).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(String(error)).toMatch(/create container.*no answer/);
      const create = daemon.requests.find((r) => r.path === "/containers/create");
      const name = create?.query.get("name") ?? "";
      expect(name).toMatch(new RegExp(`^${ThrowawayKinds[kind].namePrefix}-[0-9a-f]{12}$`));
      expect(create?.cutOff).toBe(true);
      const removal = daemon.requests.find((r) => r.method === "DELETE");
      expect(removal).toMatchObject({ path: `/containers/${name}` });
      expect(removal?.query.get("force")).toBe("true");
    },
  );

  it.each(kinds)(
    "of kind %s reports its exit status and output, and is gone afterwards",
    async (kind) => {
      const ended = await runThrowaway(
        { docker, owner: fx.owner, bound: { timeoutMs: Defaults.operationTimeoutMs } },
        job(kind, "echo out; echo err >&2; exit 3"),
      );
      expect(ended).toEqual({ exitCode: 3, stdout: "out\n", stderr: "err\n" });
      expect(await leftOf(kind)).toEqual([]);
    },
  );

  it("is removed when the caller's signal stops the job, whatever the signal says of the removal", async () => {
    const stop = new AbortController();
    const running = runThrowaway(
      {
        docker,
        owner: fx.owner,
        bound: { timeoutMs: Defaults.operationTimeoutMs, signal: stop.signal },
      },
      job("processKill", "sleep 30"),
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    await waitUntil(async () => {
      const label = [`${LabelKeys.processKill}=1`, `${LabelKeys.profile}=${fx.profile}`];
      const listed = await docker.listContainers({ filters: { label, status: ["running"] } });
      return listed.length === 1;
    }, "the job running");
    stop.abort(new Error("the caller gave up"));
    expect(String(await running)).toContain("the caller gave up");
    expect(await leftOf("processKill")).toEqual([]);
  });
});
