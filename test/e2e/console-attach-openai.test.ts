import { createHash } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { ConsoleChannel, Gateway, resolveConfig } from "@mediagate/gateway";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  contentText,
  derivedTranscript,
  FakeOpenAIServer,
  type RequestMessage,
  reply,
} from "../fakes/openai/index.js";
import { tinyPng } from "../fakes/telegram/media-fixtures.js";
import {
  createTempHome,
  TestImage,
  teardownGateway,
  testEnv,
  uniqueProfileName,
  waitUntil,
} from "./harness/gateway-home.js";

/** A one-page Ogg Opus stream head (`OggS` … `OpusHead`): sniffed as audio/ogg, like a voice note. */
function oggOpus(): Buffer {
  const body = Buffer.from("OpusHead\x01\x01\x38\x01\x80\xbb\x00\x00\x00\x00\x00", "latin1");
  const header = Buffer.alloc(28);
  header.write("OggS", 0, "latin1");
  header[5] = 0x02;
  header[26] = 1;
  header[27] = body.length;
  return Buffer.concat([header, body, Buffer.alloc(64, 3)]);
}

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

/** The text of the last user message of chat request `index`. */
function lastUserText(model: FakeOpenAIServer, index: number): string {
  const messages: readonly RequestMessage[] = model.requests[index]?.body.messages ?? [];
  const user = messages.filter((m) => m.role === "user").at(-1);
  return contentText(user?.content) ?? "";
}

/**
 * The real gateway on the console channel (in process) with the openai agent pointed at the
 * OpenAI fake, on the real engine: what `/attach` sends lands in the sandbox's inbox and the
 * agent is told about it (docs/inbound-media.md).
 */
class ConsoleGateway {
  readonly input = new PassThrough();
  readonly output = new PassThrough();
  printed = "";
  gateway: Gateway | undefined;

  private constructor(
    readonly home: string,
    readonly model: FakeOpenAIServer,
  ) {
    this.output.on("data", (chunk: Buffer) => {
      this.printed += chunk.toString();
    });
  }

  /** `agent`: the openai agent's settings beyond endpoint and model, given the fake. */
  static async start(
    agent: (model: FakeOpenAIServer) => Record<string, unknown>,
    sandbox: Record<string, unknown> = {},
  ): Promise<ConsoleGateway> {
    const model = await FakeOpenAIServer.start();
    const home = await createTempHome("console-attach");
    const harness = new ConsoleGateway(home, model);
    const profile = uniqueProfileName("e2e-attach");
    const config = resolveConfig(
      {
        home,
        profiles: [
          {
            name: profile,
            sandbox: { image: TestImage, diskLimitBytes: 0, ...sandbox },
            agent: { kind: "openai", baseUrl: model.baseUrl, model: "fake-model", ...agent(model) },
          },
        ],
      },
      { env: testEnv(home) },
    );
    const channel = new ConsoleChannel({
      profile,
      home: config.profiles[0]!.home,
      input: harness.input,
      output: harness.output,
    });
    harness.gateway = await Gateway.create(config, { channels: [channel] });
    await harness.gateway.start();
    return harness;
  }

  /** A file on this host, to /attach. */
  async file(name: string, bytes: Buffer): Promise<string> {
    const dir = join(this.home, "to-send");
    await mkdir(dir, { recursive: true });
    const path = join(dir, name);
    await writeFile(path, bytes);
    return path;
  }

  /** Types a line and waits until the console printed something matching `until`. */
  async type(line: string, until: RegExp): Promise<string> {
    const from = this.printed.length;
    this.input.write(`${line}\n`);
    await waitUntil(() => until.test(this.printed.slice(from)), `output matching ${until}`);
    await this.gateway!.idle();
    return this.printed.slice(from);
  }

  async close(): Promise<void> {
    await teardownGateway(this.gateway, this.home);
    await this.model.close();
  }
}

describe("console /attach with the openai agent, vision and transcription on", () => {
  let g: ConsoleGateway;

  beforeAll(async () => {
    g = await ConsoleGateway.start((model) => ({
      vision: true,
      transcription: { baseUrl: model.baseUrl, model: "whisper-1" },
    }));
  });

  afterAll(async () => {
    await g?.close();
  });

  it("a document sent with /attach arrives byte-for-byte in the sandbox's inbox", async () => {
    const bytes = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7) % 256));
    const path = await g.file("quarterly report.bin", bytes);
    const before = g.model.requests.length;
    g.model.enqueue(
      reply.toolCall("terminal", { command: "sha256sum /workspace/inbox/quarterly_report.bin" }),
      reply.text("checked the report"),
    );
    await g.type(`/attach "${path}" check it`, /checked the report/);
    const [first, second] = [before, before + 1];
    expect(lastUserText(g.model, first)).toBe(
      `check it\n\n[attachment: /workspace/inbox/quarterly_report.bin application/octet-stream ${bytes.length}]`,
    );
    const tool = g.model.requests[second]?.body.messages.find((m) => m.role === "tool");
    expect(contentText(tool?.content)).toContain(
      `${sha256(bytes)}  /workspace/inbox/quarterly_report.bin`,
    );
  });

  it("a voice note is transcribed by the endpoint and the transcript reaches the agent, labelled", async () => {
    const ogg = oggOpus();
    const path = await g.file("voice.ogg", ogg);
    const before = g.model.requests.length;
    const transcriptionsBefore = g.model.transcriptions.length;
    g.model.enqueue(reply.text("heard you"));
    await g.type(`/attach ${path}`, /heard you/);
    const [sent] = g.model.transcriptions.slice(transcriptionsBefore);
    expect(sent?.model).toBe("whisper-1");
    expect(sent?.bytes.equals(ogg)).toBe(true);
    expect(lastUserText(g.model, before)).toBe(
      [
        `[attachment: /workspace/inbox/voice.ogg audio/ogg ${ogg.length}]`,
        "[transcript of /workspace/inbox/voice.ogg]",
        derivedTranscript(ogg),
        "[end of transcript]",
      ].join("\n"),
    );
  });

  it("when transcription fails the user gets a notice and the agent still gets the file's line", async () => {
    const ogg = oggOpus();
    const path = await g.file("later.ogg", ogg);
    const before = g.model.requests.length;
    g.model.enqueueTranscription({ status: 503, message: "no capacity" });
    g.model.enqueue(reply.text("got the file"));
    const out = await g.type(`/attach ${path} what did I say?`, /got the file/);
    const host = new URL(g.model.baseUrl).host;
    expect(out).toContain(
      `🎙️ later.ogg could not be transcribed (${host} answered HTTP 503); the agent got the file without a transcript.\n`,
    );
    expect(out.indexOf("could not be transcribed")).toBeLessThan(out.indexOf("got the file"));
    expect(lastUserText(g.model, before)).toBe(
      [
        "what did I say?",
        "",
        `[attachment: /workspace/inbox/later.ogg audio/ogg ${ogg.length}]`,
        `[no transcript of /workspace/inbox/later.ogg: ${host} answered HTTP 503]`,
      ].join("\n"),
    );
  });

  it("with vision, an image goes to the model as an image_url part carrying its bytes", async () => {
    const png = tinyPng();
    const path = await g.file("chart.png", png);
    const before = g.model.requests.length;
    g.model.enqueue(reply.text("a tiny chart"));
    await g.type(`/attach ${path} what is this?`, /a tiny chart/);
    expect(g.model.imageUrls(before)).toEqual([`data:image/png;base64,${png.toString("base64")}`]);
    expect(lastUserText(g.model, before)).toBe(
      `what is this?\n\n[attachment: /workspace/inbox/chart.png image/png ${png.length}]`,
    );
  });

  it("/attach of a missing path says so and runs no turn", async () => {
    const before = g.model.requests.length;
    const missing = join(g.home, "to-send", "nope.pdf");
    const out = await g.type(`/attach ${missing} read it`, /There is no file at/);
    expect(out).toBe(
      `📎 There is no file at ${missing}. Check the path (quote it if it has spaces: /attach "my file.pdf"); nothing was sent.\n`,
    );
    expect(g.model.requests.length).toBe(before);
  });
});

describe("console /attach with the openai agent, vision off", () => {
  let g: ConsoleGateway;

  beforeAll(async () => {
    g = await ConsoleGateway.start(() => ({}));
  });

  afterAll(async () => {
    await g?.close();
  });

  it("an image reaches the model as its line only, with no image part, and nothing is transcribed", async () => {
    const png = tinyPng();
    const path = await g.file("chart.png", png);
    g.model.enqueue(reply.text("a file"));
    await g.type(`/attach ${path}`, /a file/);
    expect(g.model.imageUrls(0)).toEqual([]);
    expect(g.model.requests[0]?.body.messages.at(-1)).toEqual({
      role: "user",
      content: `[attachment: /workspace/inbox/chart.png image/png ${png.length}]`,
    });
    expect(g.model.transcriptions).toEqual([]);
  });
});

describe("console /attach with the openai agent on a tmpfs slot (no host path)", () => {
  let g: ConsoleGateway;

  beforeAll(async () => {
    g = await ConsoleGateway.start(
      (model) => ({ vision: true, transcription: { baseUrl: model.baseUrl, model: "whisper-1" } }),
      { filesystem: "tmpfs" },
    );
  });

  afterAll(async () => {
    await g?.close();
  });

  it("reads the image and the voice note out of the container for the model and the transcription", async () => {
    const png = tinyPng();
    const ogg = oggOpus();
    const image = await g.file("shot.png", png);
    const voice = await g.file("note.ogg", ogg);
    g.model.enqueue(reply.text("first seen"), reply.text("second heard"));
    await g.type(`/attach ${image}`, /first seen/);
    await g.type(`/attach ${voice}`, /second heard/);
    expect(g.model.imageUrls(0)).toEqual([`data:image/png;base64,${png.toString("base64")}`]);
    expect(g.model.transcriptions.map((t) => t.bytes.equals(ogg))).toEqual([true]);
    expect(lastUserText(g.model, 1)).toContain(
      `[transcript of /workspace/inbox/note.ogg]\n${derivedTranscript(ogg)}\n[end of transcript]`,
    );
  });
});
