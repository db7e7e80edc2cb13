import { randomUUID } from "node:crypto";
import { type FileHandle, mkdir, open } from "node:fs/promises";
import { join } from "node:path";
import { clearLine, createInterface, cursorTo, type Interface } from "node:readline";
import type { Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { UploadLimits } from "@mediagate/media";
import { ConsoleUser } from "../access-control/access.js";
import { Defaults } from "../defaults.js";
import { type Logger, silentLogger } from "../log.js";
import { forTerminal } from "../printable.js";
import { attachmentFor, consoleFetcher, parseAttach } from "./console-attach.js";
import type { SharedTerminal } from "./console-terminal.js";
import { guardedListener } from "./listener-boundary.js";
import type {
  AttachmentFetcher,
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

/** Defaults of {@link ConsoleChannel}. */
export const ConsoleDefaults = Defaults.console;

/** Options of {@link ConsoleChannel}. */
export interface ConsoleChannelOptions {
  /** Profile the console serves (the only profile when no token is configured). */
  readonly profile: string;
  /** Media go to `<home>/outbox/<timestamp>-<filename>`. */
  readonly home: string;
  /** Default stdin. */
  readonly input?: Readable | undefined;
  /** Where the chat goes, and nothing else; default stdout. */
  readonly output?: Writable | undefined;
  /**
   * Shown before each line of input; default `mediagate> ` when input and output are both a
   * terminal, none otherwise (piped output holds only the chat).
   */
  readonly prompt?: string | undefined;
  /** Where the channel's own problems are logged (never to `output`); default silent. */
  readonly logger?: Logger | undefined;
  /** The terminal `output` shares with the logs, when it does (see {@link SharedTerminal}). */
  readonly terminal?: SharedTerminal | undefined;
  /** Called once when input ends (Ctrl-D), e.g. to shut the gateway down. */
  readonly onClose?: (() => void) | undefined;
  readonly now?: (() => Date) | undefined;
  /** Largest file `/attach` sends in; default `Defaults.console.attachMaxBytes` (100 MiB). */
  readonly attachMaxBytes?: number | undefined;
}

function safeName(filename: string): string {
  const cleaned = filename.replace(/[^A-Za-z0-9._-]/g, "_").replace(/^\.+/, "");
  return cleaned === "" ? "file" : cleaned;
}

function stamp(date: Date): string {
  return date.toISOString().replace(/[-:]/g, "").replace(".", "");
}

function isTerminal(stream: Readable | Writable): boolean {
  return (stream as { isTTY?: unknown }).isTTY === true;
}

/**
 * The local console: lines typed on stdin are messages of user `console:local` (allowed and
 * admin by construction) in the DM chat `local`; replies are printed, and media are copied to
 * `<home>/outbox/<timestamp>-<filename>` and shown as `kind, size, path`. The output holds the
 * chat only: the channel's own problems go to its logger (stderr). On a terminal the input
 * line is edited by readline and stays at the bottom: replies (and, through
 * {@link SharedTerminal}, log lines) are printed above it and the prompt is drawn again with
 * what was typed so far.
 *
 * One line is the console's own: `/attach <path> [text]` (the core's `/help` lists it, as
 * every channel's `/help` tells how files are sent there), which sends a file of this
 * machine as if a user had sent it (docs/inbound-media.md): the
 * message carries the file (its ref is the absolute path, streamed from disk when the pipeline
 * saves it into the sandbox's inbox) and the rest of the line as its text. A path with spaces
 * is quoted (`/attach "my file.pdf" summarize it`). A missing file, a directory or an
 * unreadable file gets one line saying so, and nothing is sent.
 */
export class ConsoleChannel implements ChannelAdapter {
  readonly platform = "console" as const;
  readonly limits: UploadLimits = { maxBytes: () => ConsoleDefaults.maxBytes };
  readonly attachments: AttachmentFetcher;
  readonly #options: ConsoleChannelOptions;
  readonly #output: Writable;
  readonly #prompt: string;
  readonly #log: Logger;
  /** Input and output are a terminal: line editing, and chat output keeps off the prompt's line. */
  readonly #interactive: boolean;
  #rl: Interface | undefined;
  /** The prompt was written and no newline followed yet. */
  #promptWaiting = false;
  #counter = 0;
  #started = false;
  #sinceMs = Date.now();
  #received: Promise<void> = Promise.resolve();
  /** The output failed: nothing more is written to it. */
  #outputGone = false;
  #onFatal: ((error: Error) => void) | undefined;

  constructor(options: ConsoleChannelOptions) {
    this.#options = options;
    this.#output = options.output ?? process.stdout;
    // Without a listener a failed write (a reader gone: `mediagate start | head -1`) is an
    // uncaught exception on the next tick, which stops the gateway with exit 1 and a trace.
    this.#output.on("error", (error: NodeJS.ErrnoException) => this.#outputFailed(error));
    this.#interactive = isTerminal(options.input ?? process.stdin) && isTerminal(this.#output);
    this.#prompt = options.prompt ?? (this.#interactive ? ConsoleDefaults.prompt : "");
    this.#log = options.logger ?? silentLogger();
    this.attachments = consoleFetcher(options.attachMaxBytes ?? ConsoleDefaults.attachMaxBytes);
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
  async start({ onMessage, onFatal }: ChannelStartOptions): Promise<void> {
    this.#started = true;
    this.#onFatal = onFatal;
    this.#sinceMs = Date.now();
    const input = this.#options.input ?? process.stdin;
    const rl = createInterface({
      input,
      output: this.#output,
      terminal: this.#interactive,
      prompt: this.#prompt,
    });
    this.#rl = rl;
    // Line editing puts the terminal in raw mode, where Ctrl-C reaches readline, not the
    // process: pass it on, so the gateway stops as it does on any SIGINT.
    if (this.#interactive) rl.on("SIGINT", () => process.kill(process.pid, "SIGINT"));
    rl.on(
      "line",
      guardedListener(this.#log, "consoleLine", (line: string) => {
        this.#lineEnded();
        const text = line.trim();
        // On a terminal the prompt is back at once (replies print above it, like a chat);
        // otherwise it comes after the reply.
        if (text === "" || this.#interactive) this.#showPrompt();
        if (text === "") return;
        this.#received = this.#received
          .then(async () => {
            const message = await this.#messageOf(text);
            if (message !== undefined) await onMessage(message);
          })
          .catch((error: unknown) => {
            this.#log.warn({ err: error }, "could not record a console message");
          });
      }),
    );
    rl.once("close", () => {
      if (this.#rl === rl) this.#rl = undefined;
      this.#options.onClose?.();
    });
    this.#showPrompt();
  }

  /** The message a line is: a failed `/attach` prints its answer and is no message (`undefined`). */
  async #messageOf(line: string): Promise<InboundMessage | undefined> {
    let text = line;
    let attachments: InboundMessage["attachments"];
    const attach = parseAttach(line);
    if (typeof attach === "string") {
      this.#say(attach);
      return undefined;
    }
    if (attach !== undefined) {
      const attachment = await attachmentFor(attach.path);
      if (typeof attachment === "string") {
        this.#say(attachment);
        return undefined;
      }
      text = attach.text;
      attachments = [attachment];
    }
    this.#counter++;
    return {
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
      ...(attachments === undefined ? {} : { attachments }),
    };
  }

  /** The console's own answer to a line: printed, then the prompt. */
  #say(text: string): void {
    this.#write(`${text}\n`);
    this.#showPrompt();
  }

  async stop(): Promise<void> {
    const rl = this.#rl;
    this.#rl = undefined;
    this.#sinceMs = Date.now();
    if (this.#promptWaiting && this.#interactive) {
      clearLine(this.#output, 0);
      cursorTo(this.#output, 0);
    }
    this.#lineEnded();
    rl?.close();
    await this.#received;
  }

  async sendText(_target: ChatTarget, text: string): Promise<void> {
    this.#write(`${forTerminal(text)}\n`);
    this.#showPrompt();
  }

  async deliver(reply: OutboundReply, _options?: DeliverOptions): Promise<DeliveryReport> {
    // What a command printed reaches the operator's terminal: its escapes show as text.
    if (reply.text.trim() !== "") this.#write(`${forTerminal(reply.text.replace(/\n*$/, ""))}\n`);
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

  /**
   * The chat can no longer be shown. A reader that went away (EPIPE) ends the session as the
   * input's end does (the gateway stops, exit 0); any other failure (a full disk, EIO) stops
   * the gateway as a fatal channel error (exit 1), since replies would be lost unseen.
   */
  #outputFailed(error: NodeJS.ErrnoException): void {
    if (this.#outputGone) return;
    this.#outputGone = true;
    if (error.code === "EPIPE") {
      this.#log.warn(
        { profile: this.#options.profile },
        "the console's output was closed (its reader went away): stopping",
      );
      this.#rl?.close();
      return;
    }
    this.#log.error({ err: error }, "could not write the console's output");
    this.#onFatal?.(
      new Error(`could not write the console's output (${error.code ?? error.message})`, {
        cause: error,
      }),
    );
  }

  /** Writes chat output on lines of its own: a waiting prompt is taken off its line first. */
  #write(text: string): void {
    if (this.#outputGone) return;
    if (this.#promptWaiting && this.#interactive) {
      clearLine(this.#output, 0);
      cursorTo(this.#output, 0);
    }
    this.#output.write(this.#promptWaiting && !this.#interactive ? `\n${text}` : text);
    this.#lineEnded();
  }

  #lineEnded(): void {
    this.#promptWaiting = false;
    this.#options.terminal?.lineEnded();
  }

  /** Shows the prompt with whatever was typed after it so far (line editing keeps it). */
  #showPrompt(): void {
    const rl = this.#rl;
    if (rl === undefined || this.#prompt === "" || this.#promptWaiting || this.#outputGone) return;
    rl.prompt(true);
    this.#promptWaiting = true;
    this.#options.terminal?.promptShown(() => rl.prompt(true));
  }
}
