import { createHash, randomBytes } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import type { TelegramChannel } from "@mediagate/gateway";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { waitFor } from "../../test-support/wait.js";
import { FaultProxy } from "../fakes/fault-proxy/index.js";
import { FakeTelegram } from "../fakes/telegram/index.js";
import { CliInstall } from "./harness/cli-install.js";
import { waitUntil } from "./harness/gateway-home.js";

/**
 * Receiving durably (docs/durability.md): the real TelegramChannel and grammY against
 * FakeTelegram, behind the fault proxy where a test needs getUpdates to fail.
 */

let fake: FakeTelegram;
let proxy: FaultProxy;
const channels: TelegramChannel[] = [];
const installs: CliInstall[] = [];

/** The waits the channel asked for; each resolves at once (no wall-clock backoff). */
/** The channel's health at each wait. */

beforeEach(async () => {
  fake = new FakeTelegram();
  const { apiRoot } = await fake.start();
  proxy = new FaultProxy(apiRoot);
  await proxy.start();
});

afterEach(async () => {
  await Promise.all(channels.splice(0).map((channel) => channel.stop()));
  await Promise.all(installs.splice(0).map((install) => install.dispose()));
  await proxy.stop();
  await fake.stop();
});

// SIGKILL-and-restart tests of telegram-durability-polling.test.ts, in the long suite with the others (test/long/README.md).
describe("an album's last item through a crash (the real CLI, SIGKILLed)", () => {
  const User = 77;
  const isGetUpdates = (path: string) => /^\/bot[^/]+\/getUpdates$/.test(path);
  /** The texts the bot posted to the user, in order. */
  const replies = () =>
    fake
      .callsTo("sendMessage")
      .filter((call) => call.ok && String(call.params.chat_id) === String(User))
      .map((call) => String(call.params.text));

  /** The files in the profile's inbox on the host, by name, as sha256 of their bytes. */
  async function inbox(install: CliInstall): Promise<Map<string, string>> {
    const slot = `profile:${install.profile}`;
    const hash = createHash("sha256").update(slot).digest("hex").slice(0, 12);
    const dir = join(
      install.home,
      "profiles",
      install.profile,
      "sandboxes",
      "docker",
      `${slot.replace(":", "_")}-${hash}`,
      "workspace",
      "inbox",
    );
    const files = new Map<string, string>();
    for (const name of (await readdir(dir)).sort())
      files.set(name, sha(await readFile(join(dir, name))));
    return files;
  }
  const sha = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

  it("runs the item that came while the confirm was held once after the restart, and the recorded ones not again", async () => {
    const install = await CliInstall.create("tg-album", {
      telegram: { token: fake.token, apiRoot: proxy.url },
      allowedUsers: [`telegram:${User}`],
      progress: { enabled: false },
    });
    installs.push(install);
    await install.start();
    await waitFor(() => expect(fake.polling).toBe(true));
    // The poll held now answers the album's first two items, and the one more poll after the
    // album wait finds them again; every getUpdates after that (the one that would confirm
    // them) stalls on the way and never reaches Telegram.
    let polls = 0;
    proxy.add(
      { path: (path) => isGetUpdates(path) && ++polls > 1 },
      { kind: "hang", stage: "before" },
      Number.POSITIVE_INFINITY,
    );
    const bytes = [randomBytes(1000), randomBytes(2000), randomBytes(3000)];
    const { updates } = fake.sendAlbum(
      [
        { kind: "photo", bytes: bytes[0], userId: User },
        { kind: "photo", bytes: bytes[1], userId: User },
      ],
      'for f in $MEDIAGATE_ATTACHMENTS; do echo "ran:$f"; done',
    );
    const group = updates[0]?.message?.media_group_id;
    // Answered, and the delivery recorded (`turn finished` follows it).
    await waitUntil(
      () => replies().some((text) => text.startsWith("ran:")),
      "the album's first two items to be answered",
    );
    await waitUntil(
      () => install.output().includes('"msg":"turn finished"'),
      "the album's turn to finish",
    );
    await proxy.waitFor((r) => isGetUpdates(r.path) && r.fault?.kind === "hang");
    fake.sendMedia({ kind: "photo", bytes: bytes[2], userId: User, mediaGroupId: group });
    expect(fake.pendingUpdates).toBe(3);
    await install.kill();

    proxy.clear();
    await install.start();
    await waitUntil(() => replies().length === 2, "the third item to be answered");
    await waitFor(() => expect(fake.pendingUpdates).toBe(0));
    expect(install.output()).toContain(
      "telegram album offered again with items not recorded before",
    );
    const [album, third] = replies();
    expect(album?.split("\n")).toEqual([
      expect.stringMatching(/^ran:\/workspace\/inbox\/photo(-\d+)?\.jpg$/),
      expect.stringMatching(/^ran:\/workspace\/inbox\/photo(-\d+)?\.jpg$/),
    ]);
    const thirdPath = /\/workspace\/inbox\/(photo(-\d+)?\.jpg)/.exec(third ?? "")?.[1];
    expect(replies()).toEqual([album, expect.stringContaining(`/workspace/inbox/${thirdPath}`)]);
    // Each item saved once: the first two by the first run, the third by the second.
    const saved = await inbox(install);
    expect([...saved.values()].sort()).toEqual(bytes.map(sha).sort());
    expect(saved.get(thirdPath ?? "")).toBe(sha(bytes[2] as Buffer));
    expect(replies()).toHaveLength(2);
  });
});
