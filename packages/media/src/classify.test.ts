import { describe, expect, it } from "vitest";
import { Bytes } from "../test/helpers.js";
import { classify } from "./classify.js";

const plain = { asVoice: false, asDocument: false };
const voice = { asVoice: true, asDocument: false };
const document = { asVoice: false, asDocument: true };

describe("classify", () => {
  it.each([
    ["png", Bytes.png, "x.bin", plain, "photo", "image/png"],
    ["jpeg", Bytes.jpeg, "x", plain, "photo", "image/jpeg"],
    ["gif", Bytes.gif, "x.png", plain, "animation", "image/gif"],
    ["mp4", Bytes.mp4, "clip.txt", plain, "video", "video/mp4"],
    ["ogg opus", Bytes.opus, "a.ogg", plain, "audio", "audio/ogg; codecs=opus"],
    ["ogg opus as voice", Bytes.opus, "a.ogg", voice, "voice", "audio/ogg; codecs=opus"],
    ["ogg vorbis as voice", Bytes.vorbis, "a.oga", voice, "voice", "audio/ogg"],
    ["png as document", Bytes.png, "x.png", document, "document", "image/png"],
    ["voice directive on a photo", Bytes.png, "x.png", voice, "photo", "image/png"],
  ] as const)(
    "sniffs %s by content before the extension",
    async (_, head, name, directives, kind, mime) => {
      expect(await classify(head, name, directives)).toEqual({ kind, mime });
    },
  );

  it.each([
    ["photo.JPG", "photo", "image/jpeg"],
    ["anim.gif", "animation", "image/gif"],
    ["song.mp3", "audio", "audio/mpeg"],
    ["notes.md", "document", "text/markdown"],
    ["data.unknown", "document", "application/octet-stream"],
    ["noext", "document", "application/octet-stream"],
  ] as const)(
    "falls back to the extension of %s when content is unknown",
    async (name, kind, mime) => {
      expect(await classify(Bytes.text, name, plain)).toEqual({ kind, mime });
    },
  );

  it("makes a voice note only of ogg audio", async () => {
    expect((await classify(Bytes.text, "a.mp3", voice)).kind).toBe("audio");
    expect((await classify(Bytes.text, "a.opus", voice)).kind).toBe("voice");
  });
});
