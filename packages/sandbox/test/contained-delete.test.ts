import { afterEach, describe, expect, it } from "vitest";
import { deleteInContainer } from "../src/contained-delete.js";
import { dockerOf } from "../src/docker-client.js";
import { connectDocker } from "../src/index.js";
import { TestImage } from "./helpers.js";
import { startWedgedDaemon, type WedgedDaemon } from "./wedged-daemon.js";

let daemon: WedgedDaemon | undefined;

afterEach(async () => {
  await daemon?.close();
  daemon = undefined;
});

describe("the throwaway delete container", () => {
  it("is removed by its name when its create got no answer (the engine may still make it)", async () => {
    daemon = await startWedgedDaemon(["POST /containers/create"]);
    const docker = dockerOf(connectDocker({ host: daemon.host }));
    const error = await deleteInContainer(
      {
        docker,
        image: TestImage,
        owner: { install: "0123456789ab", profile: "p" },
        bound: { timeoutMs: 200 },
      },
      "/nonexistent/slot",
      ["workspace"],
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(String(error)).toMatch(/create container.*no answer/);
    const create = daemon.requests.find((r) => r.path === "/containers/create");
    const name = create?.query.get("name") ?? "";
    expect(name).toMatch(/^mediagate-delete-[0-9a-f]{12}$/);
    expect(create?.cutOff).toBe(true);
    const removal = daemon.requests.find((r) => r.method === "DELETE");
    expect(removal).toMatchObject({ path: `/containers/${name}` });
    expect(removal?.query.get("force")).toBe("true");
  });
});
