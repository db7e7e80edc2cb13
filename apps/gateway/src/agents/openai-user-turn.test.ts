import { mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { silentLogger } from "../log.js";
import {
  attachmentLine,
  buildUserTurn,
  transcriptBlock,
  type UserTurnOptions,
} from "./openai-user-turn.js";
import type { ContainerFileReader, TurnAttachment } from "./types.js";

/** A PNG signature and a little more: what an image input carries, byte for byte. */
const Png = Buffer.concat([Buffer.from("89504e470d0a1a0a", "hex"), Buffer.from("pixels")]);

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "mg-user-turn-"));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function file(patch: Partial<TurnAttachment> = {}): TurnAttachment {
  return {
    name: "report.pdf",
    containerPath: "/workspace/inbox/report.pdf",
    hostPath: undefined,
    kind: "document",
    mime: "application/pdf",
    size: 1234,
    sentAs: "document",
    ...patch,
  };
}

async function image(patch: Partial<TurnAttachment> = {}): Promise<TurnAttachment> {
  const hostPath = join(dir, "photo.png");
  await writeFile(hostPath, Png);
  return file({
    name: "photo.png",
    containerPath: "/workspace/inbox/photo.png",
    hostPath,
    kind: "photo",
    mime: "image/png",
    size: Png.length,
    sentAs: "photo",
    ...patch,
  });
}

function options(patch: Partial<UserTurnOptions> = {}): UserTurnOptions {
  return {
    vision: false,
    imageMaxBytes: 1024,
    imagesMaxBytes: 4096,
    transcriber: undefined,
    transcriptionMaxBytes: 1024,
    readContainerFile: undefined,
    signal: new AbortController().signal,
    log: silentLogger(),
    ...patch,
  };
}

/** A container that has `files`, recording what was asked of it. */
function container(files: Record<string, Buffer>, asked: string[] = []): ContainerFileReader {
  return async (path, maxBytes) => {
    asked.push(path);
    const bytes = files[path];
    if (bytes === undefined) return undefined;
    async function* stream() {
      if (bytes !== undefined && bytes.length > maxBytes) throw new Error("over the bound");
      yield bytes ?? Buffer.alloc(0);
    }
    return { size: bytes.length, stream: stream() };
  };
}

const dataUrl = (bytes: Buffer) => `data:image/png;base64,${bytes.toString("base64")}`;

describe("buildUserTurn", () => {
  it("is the message's text when no file came with it", async () => {
    expect(await buildUserTurn("hello", [], options())).toEqual({
      text: "hello",
      content: "hello",
      notices: [],
    });
  });

  it("adds one line per file, `[attachment: <container path> <mime> <size>]`, after the text", async () => {
    const turn = await buildUserTurn(
      "what is in these?",
      [
        file(),
        file({
          containerPath: "/workspace/inbox/v.ogg",
          mime: "audio/ogg; codecs=opus",
          size: 77,
          kind: "voice",
        }),
      ],
      options(),
    );
    expect(turn.text).toBe(
      [
        "what is in these?",
        "",
        "[attachment: /workspace/inbox/report.pdf application/pdf 1234]",
        "[attachment: /workspace/inbox/v.ogg audio/ogg 77]",
      ].join("\n"),
    );
    expect(turn.content).toBe(turn.text);
    expect(turn.notices).toEqual([]);
  });

  it("is just the lines for files sent without text", async () => {
    const turn = await buildUserTurn("", [file()], options());
    expect(turn.text).toBe(attachmentLine(file()));
  });

  it("passes no image input without vision", async () => {
    const photo = await image();
    const turn = await buildUserTurn("look", [photo], options());
    expect(turn.content).toBe(`look\n\n${attachmentLine(photo)}`);
  });

  it("with vision, passes an image as an image_url part with the file's bytes as a data: URL, and keeps the text apart", async () => {
    const photo = await image();
    const turn = await buildUserTurn("look", [photo, file()], options({ vision: true }));
    expect(turn.text).toBe(`look\n\n${attachmentLine(photo)}\n${attachmentLine(file())}`);
    expect(turn.content).toEqual([
      { type: "text", text: turn.text },
      { type: "image_url", image_url: { url: dataUrl(Png) } },
    ]);
  });

  it("says in the turn when an image is over the limit for image inputs, and passes none", async () => {
    const photo = await image();
    const turn = await buildUserTurn(
      "",
      [photo],
      options({ vision: true, imageMaxBytes: Png.length - 1 }),
    );
    expect(turn.content).toBe(turn.text);
    expect(turn.text).toBe(
      `${attachmentLine(photo)}\n[/workspace/inbox/photo.png is not shown to you as an image: it is ${Png.length} B, over the ${Png.length - 1} B limit for image inputs]`,
    );
  });

  it("passes images until the message's image budget is spent, and says which were left out", async () => {
    const one = await image();
    const two = { ...one, containerPath: "/workspace/inbox/two.png" };
    const three = { ...one, containerPath: "/workspace/inbox/three.png" };
    const turn = await buildUserTurn(
      "",
      [one, two, three],
      options({ vision: true, imagesMaxBytes: 2 * Png.length }),
    );
    expect(turn.text).toBe(
      [
        attachmentLine(one),
        attachmentLine(two),
        attachmentLine(three),
        `[/workspace/inbox/three.png is not shown to you as an image: the message's images are over ${2 * Png.length} B together, the limit for image inputs]`,
      ].join("\n"),
    );
    expect(turn.content).toEqual([
      { type: "text", text: turn.text },
      { type: "image_url", image_url: { url: dataUrl(Png) } },
      { type: "image_url", image_url: { url: dataUrl(Png) } },
    ]);
  });

  it("reads an image from the container when the slot has no host path", async () => {
    const asked: string[] = [];
    const photo = await image({ hostPath: undefined });
    const turn = await buildUserTurn(
      "",
      [photo],
      options({
        vision: true,
        readContainerFile: container({ [photo.containerPath]: Png }, asked),
      }),
    );
    expect(asked).toEqual([photo.containerPath]);
    expect(turn.content).toEqual([
      { type: "text", text: attachmentLine(photo) },
      { type: "image_url", image_url: { url: dataUrl(Png) } },
    ]);
  });

  it("never follows a link the sandbox put in place of the host file: the container is asked instead", async () => {
    const secret = join(dir, "host-secret.png");
    await writeFile(secret, Buffer.concat([Png, Buffer.from("host only")]));
    const photo = await image();
    await rm(photo.hostPath ?? "");
    await symlink(secret, photo.hostPath ?? "");
    const asked: string[] = [];
    const turn = await buildUserTurn(
      "",
      [photo],
      options({
        vision: true,
        readContainerFile: container({ [photo.containerPath]: Png }, asked),
      }),
    );
    expect(asked).toEqual([photo.containerPath]);
    expect(turn.content).toEqual([
      { type: "text", text: attachmentLine(photo) },
      { type: "image_url", image_url: { url: dataUrl(Png) } },
    ]);
  });

  it("says the image could not be read when neither the host nor the container has it", async () => {
    const photo = await image({ hostPath: join(dir, "gone.png") });
    const turn = await buildUserTurn(
      "",
      [photo],
      options({ vision: true, readContainerFile: container({}) }),
    );
    expect(turn.content).toBe(
      `${attachmentLine(photo)}\n[/workspace/inbox/photo.png is not shown to you as an image: it could not be read]`,
    );
  });

  it("passes only image types endpoints take as image inputs", async () => {
    const bmp = file({
      containerPath: "/workspace/inbox/x.bmp",
      mime: "image/bmp",
      kind: "document",
    });
    const turn = await buildUserTurn("", [bmp], options({ vision: true }));
    expect(turn.content).toBe(
      `${attachmentLine(bmp)}\n[/workspace/inbox/x.bmp is not shown to you as an image: image/bmp is not an image input type (PNG, JPEG, WebP, GIF)]`,
    );
  });
});

describe("transcriptBlock", () => {
  it("labels a transcript with the file it is of", () => {
    expect(transcriptBlock("/workspace/inbox/v.ogg", "hi there")).toBe(
      "[transcript of /workspace/inbox/v.ogg]\nhi there\n[end of transcript]",
    );
  });
});
