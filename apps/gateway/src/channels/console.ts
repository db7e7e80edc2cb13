import { randomUUID } from "node:crypto";
import { type FileHandle, mkdir, open } from "node:fs/promises";
import { join } from "node:path";
import { createInterface, type Interface } from "node:readline";
import type { Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { UploadLimits } from "@mediagate/media";
import { Defaults } from "../defaults.js";
import { ConsoleUser } from "../runtime/access.js";
import type {
  ChannelAdapter,
  ChannelHealth,
  ChannelStartOptions,
  ChatTarget,
  DeliverOptions,
  DeliveryOutcome,
  DeliveryReport,
  InboundMessage,
  OutboundReply,
} from "./types.js";

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Defaults of {@link ConsoleChannel}. */
export const ConsoleDefaults = Defaults.console;

/** Options of {@link ConsoleChannel}. */
export interface ConsoleChannelOptions {
  /** Profile the console serves (the only profile when no token is configured). */
  readonly profile: string;
  /** Media go to `<home>/outbox/<timestamp>-<filename>`. */
  readonly home: string;
  readonly input?: Readable | undefined;
  readonly output?: Writable | undefined;
  readonly prompt?: string | undefined;
  /** Called once when input ends (Ctrl-D), e.g. to shut the gateway down. */
  readonly onClose?: (() => void) | undefined;
  readonly now?: (() => Date) | undefined;
}

function safeName(filename: string): string {
  const cleaned = filename.replace(/[^A-Za-z0-9._-]/g, "_").replace(/^\.+/, "");
  return cleaned === "" ? "file" : cleaned;
}

function stamp(date: Date): string {
  return date.toISOString().replace(/[-:]/g, "").replace(".", "");
}

/**
 * The local console: lines typed on stdin are messages of user `console:local` (allowed and
 * admin by construction) in the DM chat `local`; replies are printed, and media are copied to
 * `<home>/outbox/<timestamp>-<filename>` and shown as `kind, size, path`.
 */
export class ConsoleChannel implements ChannelAdapter {
  readonly platform = "console" as const;
  readonly limits: UploadLimits = { maxBytes: () => ConsoleDefaults.maxBytes };
  readonly #options: ConsoleChannelOptions;
  readonly #output: Writable;
  readonly #prompt: string;
  #rl: Interface | undefined;
  #counter = 0;
  #started = false;
  #sinceMs = Date.now();
  #received: Promise<void> = Promise.resolve();

  constructor(options: ConsoleChannelOptions) {
    this.#options = options;
    this.#output = options.output ?? process.stdout;
    this.#prompt = options.prompt ?? ConsoleDefaults.prompt;
  }

  get profile(): string {
    return this.#options.profile;
  }

  /** The console is up while its input is open. */
  health(): ChannelHealth {
    return {
      platform: "console",
      profile: this.#options.profile,
      state: this.#rl === undefined ? (this.#started ? "stopped" : "starting") : "up",
      sinceMs: this.#sinceMs,
    };
  }

  /**
   * Starts reading lines; each non-empty line becomes one message. Lines are handed on in
   * order, each once the previous one is recorded.
   */
  async start({ onMessage }: ChannelStartOptions): Promise<void> {
    this.#started = true;
    this.#sinceMs = Date.now();
    const input = this.#options.input ?? process.stdin;
    const rl = createInterface({ input, output: this.#output, terminal: false });
    this.#rl = rl;
    rl.on("line", (line) => {
      const text = line.trim();
      if (text === "") {
        this.#showPrompt();
        return;
      }
      this.#counter++;
      const message: InboundMessage = {
        profile: this.#options.profile,
        platform: "console",
        chatId: ConsoleDefaults.chatId,
        chatType: "dm",
        chatName: "console",
        userId: ConsoleUser.userId,
        userName: "local",
        messageId: String(this.#counter),
        text,
        receiptId: randomUUID(),
      };
      this.#received = this.#received
        .then(() => onMessage(message))
        .catch((error: unknown) => {
          this.#write(`mediagate: could not record that message: ${describe(error)}\n`);
        });
    });
    rl.once("close", () => {
      if (this.#rl === rl) this.#rl = undefined;
      this.#options.onClose?.();
    });
    this.#showPrompt();
  }

  async stop(): Promise<void> {
    const rl = this.#rl;
    this.#rl = undefined;
    this.#sinceMs = Date.now();
    rl?.close();
    await this.#received;
  }

  async sendText(_target: ChatTarget, text: string): Promise<void> {
    this.#write(`${text}\n`);
    this.#showPrompt();
  }

  async deliver(reply: OutboundReply, _options?: DeliverOptions): Promise<DeliveryReport> {
    if (reply.text.trim() !== "") this.#write(`${reply.text.replace(/\n*$/, "")}\n`);
    const outcomes: DeliveryOutcome[] = [];
    const ready = reply.plan.ready();
    if (ready.length > 0) {
      const outbox = join(this.#options.home, "outbox");
      await mkdir(outbox, { recursive: true });
      for (const media of ready) {
        const now = (this.#options.now ?? (() => new Date()))();
        try {
          const path = await this.#copy(
            media.file.stream(),
            outbox,
            `${stamp(now)}-${safeName(media.filename)}`,
          );
          this.#write(`[${media.kind}, ${media.size} bytes, ${path}]\n`);
          outcomes.push({ status: "delivered", path: media.path, kind: media.kind });
        } catch (error) {
          outcomes.push({
            status: "upload_failed",
            path: media.path,
            error: error instanceof Error ? error.message : String(error),
          });
        }
      }
    }
    this.#showPrompt();
    return { outcomes };
  }

  async showActivity(): Promise<void> {}

  /** Copies to `dir/name`, never overwriting: a taken name gets a `-<n>` before the filename. */
  async #copy(source: Readable, dir: string, name: string): Promise<string> {
    for (let attempt = 0; ; attempt++) {
      const path = join(dir, attempt === 0 ? name : name.replace("-", `-${attempt}-`));
      let handle: FileHandle;
      try {
        handle = await open(path, "wx", 0o600);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "EEXIST" && attempt < 100) continue;
        throw error;
      }
      await pipeline(source, handle.createWriteStream());
      return path;
    }
  }

  #write(text: string): void {
    this.#output.write(text);
  }

  #showPrompt(): void {
    if (this.#rl !== undefined && this.#prompt !== "") this.#output.write(this.#prompt);
  }
}
