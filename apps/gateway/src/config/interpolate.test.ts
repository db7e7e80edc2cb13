import { describe, expect, it } from "vitest";
import { interpolate } from "./interpolate.js";

const variables = { TOKEN: "123:abc", EMPTY: "", HOST: "127.0.0.1" };

describe("${VAR} references in config strings", () => {
  it.each([
    ["${TOKEN}", "123:abc"],
    ["bot-${TOKEN}-x", "bot-123:abc-x"],
    ["http://${HOST}:${PORT:-8081}/v1", "http://127.0.0.1:8081/v1"],
    ["${EMPTY:-fallback}", "fallback"],
    ["${HOST:-unused}", "127.0.0.1"],
    ["${MISSING:-}", ""],
    ["$${TOKEN}", "${TOKEN}"],
    ["a $$ and a $ stay", "a $$ and a $ stay"],
    ["{TOKEN} and $TOKEN are plain text", "{TOKEN} and $TOKEN are plain text"],
  ])("%j becomes %j", (text, expected) => {
    const { value, issues } = interpolate({ key: text }, variables);
    expect(issues).toEqual([]);
    expect(value).toEqual({ key: expected });
  });

  it("resolves strings at any depth and leaves keys, numbers and booleans alone", () => {
    const raw = {
      "${TOKEN}": 4,
      profiles: [{ name: "a", telegram: { token: "${TOKEN}" }, flags: [true, 2, "${HOST}"] }],
    };
    expect(interpolate(raw, variables).value).toEqual({
      "${TOKEN}": 4,
      profiles: [{ name: "a", telegram: { token: "123:abc" }, flags: [true, 2, "127.0.0.1"] }],
    });
  });

  it("names the key path and the variable of every unset or empty reference", () => {
    const { value, issues } = interpolate(
      {
        profiles: [
          { name: "a", telegram: { token: "${TELEGRAM_BOT_TOKEN}" } },
          { name: "b", discord: { token: "x-${EMPTY}" }, admins: ["${NOPE}"] },
        ],
      },
      variables,
    );
    expect(issues).toEqual([
      {
        path: "profiles[0].telegram.token",
        keys: ["profiles", 0, "telegram", "token"],
        got: "${TELEGRAM_BOT_TOKEN}",
        expected: "the environment variable TELEGRAM_BOT_TOKEN to be set (it is unset or empty)",
      },
      {
        path: "profiles[1].discord.token",
        keys: ["profiles", 1, "discord", "token"],
        got: "${EMPTY}",
        expected: "the environment variable EMPTY to be set (it is unset or empty)",
      },
      {
        path: "profiles[1].admins[0]",
        keys: ["profiles", 1, "admins", 0],
        got: "${NOPE}",
        expected: "the environment variable NOPE to be set (it is unset or empty)",
      },
    ]);
    // An unresolved string is dropped, never passed on half-resolved.
    expect(value).toEqual({
      profiles: [
        { name: "a", telegram: {} },
        { name: "b", discord: {}, admins: [undefined] },
      ],
    });
  });

  it.each([
    ["${"],
    ["${1ABC}"],
    ["${A-B}"],
    ["pre ${TOKEN"],
    ["${}"],
    // Nested: the first `}` ends the reference, so these once loaded as `${B}` and `123:abc}`.
    ["${MISSING:-${B}}"],
    ["${TOKEN:-${B}}"],
    ["${TOKEN:-$${B}}"],
  ])("refuses the malformed reference %j without echoing it", (text) => {
    const { value, issues } = interpolate({ key: text }, variables);
    expect(issues).toEqual([
      {
        path: "key",
        keys: ["key"],
        got: "a malformed ${…} reference",
        expected:
          "${NAME} or ${NAME:-default} with NAME made of letters, digits and _ (write $${ for a literal ${)",
      },
    ]);
    expect(value).toEqual({});
  });
});
