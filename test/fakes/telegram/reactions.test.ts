import { Api, GrammyError } from "grammy";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FakeTelegram } from "./server.js";

let fake: FakeTelegram;
let api: Api;

beforeEach(async () => {
  fake = new FakeTelegram();
  const { apiRoot } = await fake.start();
  api = new Api(fake.token, { apiRoot });
});

afterEach(async () => {
  await fake.stop();
});

describe("FakeTelegram setMessageReaction with the real grammY", () => {
  it("replaces the bot's reaction with each call and removes it with an empty list", async () => {
    await api.setMessageReaction(7, 40, [{ type: "emoji", emoji: "👀" }]);
    await api.setMessageReaction(7, 40, [{ type: "emoji", emoji: "👨‍💻" }]);
    expect(fake.reactions.on("7", 40)).toEqual(["👨‍💻"]);
    await api.setMessageReaction(7, 40, []);
    expect(fake.reactions.on("7", 40)).toEqual([]);
    expect(fake.reactions.changes.map((c) => c.emojis)).toEqual([["👀"], ["👨‍💻"], []]);
  });

  it("refuses an emoji outside Telegram's list, and more than one reaction, like Telegram", async () => {
    const refused = (emoji: string) =>
      api.setMessageReaction(7, 40, [{ type: "emoji", emoji } as never]).catch((e) => e);
    for (const emoji of ["✅", "👨💻", "⏳"]) {
      const error = await refused(emoji);
      expect(error).toBeInstanceOf(GrammyError);
      expect((error as GrammyError).description).toBe("Bad Request: REACTION_INVALID");
    }
    const two = await api
      .setMessageReaction(7, 40, [
        { type: "emoji", emoji: "👍" },
        { type: "emoji", emoji: "🔥" },
      ])
      .catch((e) => e);
    expect((two as GrammyError).description).toBe("Bad Request: REACTIONS_TOO_MANY");
    expect(fake.reactions.changes).toEqual([]);
  });
});
