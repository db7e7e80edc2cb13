import { formatBytes } from "@mediagate/media";
import type { ChatCompletionContentPart } from "openai/resources/chat/completions";
import type { Logger } from "../log.js";
import { openAttachment, readAll } from "./attachment-bytes.js";
import type { Transcriber } from "./openai-transcription.js";
import type { ContainerFileReader, TurnAttachment } from "./types.js";

/** Image types chat-completions endpoints take as image inputs. */
const VisionMimes = new Set(["image/png", "image/jpeg", "image/webp", "image/gif"]);

/** What the user turn is built with (the agent's settings and the turn's sandbox access). */
export interface UserTurnOptions {
  /** Images are also passed as image inputs (`agent.vision`). */
  readonly vision: boolean;
  readonly imageMaxBytes: number;
  /** All image inputs of one message together (each request of the turn carries them). */
  readonly imagesMaxBytes: number;
  /** Voice notes and audio are transcribed (`agent.transcription`), when set. */
  readonly transcriber: Transcriber | undefined;
  readonly transcriptionMaxBytes: number;
  readonly readContainerFile: ContainerFileReader | undefined;
  readonly signal: AbortSignal;
  readonly log: Logger;
}

/** The user's message as the model gets it. */
export interface UserTurn {
  /** The text: the message, one line per file, transcripts. History keeps this. */
  readonly text: string;
  /** What the request carries: the text, and with vision each image as an image input. */
  readonly content: string | ChatCompletionContentPart[];
  /** Lines for the chat (a voice note that could not be transcribed). */
  readonly notices: string[];
}

/** A MIME type without parameters (`audio/ogg; codecs=opus` → `audio/ogg`): one word on the line. */
export function mimeEssence(mime: string): string {
  return mime.split(";")[0]?.trim().toLowerCase() || "application/octet-stream";
}

/** The line that tells the model about one file: `[attachment: <path> <mime> <size in bytes>]`. */
export function attachmentLine(attachment: TurnAttachment): string {
  return `[attachment: ${attachment.containerPath} ${mimeEssence(attachment.mime)} ${attachment.size}]`;
}

/** A transcript, labelled with the file it is of. */
export function transcriptBlock(containerPath: string, transcript: string): string {
  return `[transcript of ${containerPath}]\n${transcript}\n[end of transcript]`;
}

/**
 * The user turn of a message with files (docs/inbound-media.md): the message's text, then per
 * file its {@link attachmentLine}, followed by its transcript (voice and audio, with
 * transcription configured) or a bracketed note saying why there is none, or why an image was
 * not passed as an image input. With `vision`, images (PNG, JPEG, WebP, GIF up to
 * `imageMaxBytes` each and `imagesMaxBytes` together) are added as `image_url` parts with a `data:` URL; only the text is kept in
 * the history. A message without files is its text.
 */
export async function buildUserTurn(
  text: string,
  attachments: readonly TurnAttachment[],
  options: UserTurnOptions,
): Promise<UserTurn> {
  if (attachments.length === 0) return { text, content: text, notices: [] };
  const lines: string[] = text.trim() === "" ? [] : [text, ""];
  const images: ChatCompletionContentPart[] = [];
  const notices: string[] = [];
  let imageBytes = 0;
  for (const attachment of attachments) {
    lines.push(attachmentLine(attachment));
    if (options.vision && attachment.mime.startsWith("image/")) {
      const left = options.imagesMaxBytes - imageBytes;
      const image =
        attachment.size > left && attachment.size <= options.imageMaxBytes
          ? `[${attachment.containerPath} is not shown to you as an image: the message's images are over ${formatBytes(options.imagesMaxBytes)} together, the limit for image inputs]`
          : await imagePart(attachment, options);
      if (typeof image === "string") lines.push(image);
      else {
        images.push(image.part);
        imageBytes += image.bytes;
      }
    }
    if (
      options.transcriber !== undefined &&
      (attachment.kind === "voice" || attachment.kind === "audio")
    ) {
      const transcript = await transcribe(attachment, options.transcriber, options);
      lines.push(transcript.line);
      if (transcript.notice !== undefined) notices.push(transcript.notice);
    }
  }
  const full = lines.join("\n");
  return {
    text: full,
    content: images.length === 0 ? full : [{ type: "text", text: full }, ...images],
    notices,
  };
}

/** The image input of an image file, or the note saying why it is not one. */
async function imagePart(
  attachment: TurnAttachment,
  options: UserTurnOptions,
): Promise<{ part: ChatCompletionContentPart; bytes: number } | string> {
  const path = attachment.containerPath;
  const mime = mimeEssence(attachment.mime);
  if (!VisionMimes.has(mime)) {
    return `[${path} is not shown to you as an image: ${mime} is not an image input type (PNG, JPEG, WebP, GIF)]`;
  }
  const limit = formatBytes(options.imageMaxBytes);
  const tooLarge = (size: number) =>
    `[${path} is not shown to you as an image: it is ${formatBytes(size)}, over the ${limit} limit for image inputs]`;
  const opened = await openAttachment(
    attachment,
    options.imageMaxBytes,
    options.readContainerFile,
    options.signal,
  );
  if ("problem" in opened) {
    return opened.problem === "too_large"
      ? tooLarge(opened.size)
      : `[${path} is not shown to you as an image: it could not be read]`;
  }
  let bytes: Buffer | undefined;
  try {
    bytes = await readAll(opened, options.imageMaxBytes);
  } catch (error) {
    options.log.warn({ err: error, path }, "could not read an image for the model");
    return `[${path} is not shown to you as an image: it could not be read]`;
  }
  if (bytes === undefined) {
    return `[${path} is not shown to you as an image: it is over the ${limit} limit for image inputs]`;
  }
  return {
    part: {
      type: "image_url",
      image_url: { url: `data:${mime};base64,${bytes.toString("base64")}` },
    },
    bytes: bytes.length,
  };
}

/** The transcript block of an audio file, or a note (and a notice for the chat) why not. */
async function transcribe(
  attachment: TurnAttachment,
  transcriber: Transcriber,
  options: UserTurnOptions,
): Promise<{ line: string; notice?: string }> {
  const path = attachment.containerPath;
  const shown = path.slice(path.lastIndexOf("/") + 1);
  const failed = (reason: string) => ({
    line: `[no transcript of ${path}: ${reason}]`,
    notice: `🎙️ ${shown} could not be transcribed (${reason}); the agent got the file without a transcript.`,
  });
  const opened = await openAttachment(
    attachment,
    options.transcriptionMaxBytes,
    options.readContainerFile,
    options.signal,
  );
  if ("problem" in opened) {
    return failed(
      opened.problem === "too_large"
        ? `it is ${formatBytes(opened.size)}, over the ${formatBytes(options.transcriptionMaxBytes)} transcription limit`
        : "the file could not be read",
    );
  }
  try {
    const transcript = await transcriber.transcribe(
      { name: shown, mime: mimeEssence(attachment.mime), bytes: opened.stream },
      options.signal,
    );
    options.log.info({ path, chars: transcript.length }, "transcribed");
    return { line: transcriptBlock(path, transcript) };
  } catch (error) {
    if (options.signal.aborted) throw error;
    options.log.warn({ err: error, path, endpoint: transcriber.host }, "transcription failed");
    return failed(error instanceof Error ? error.message : String(error));
  } finally {
    // Ends a read the request left (a failed send): closes the file or the container reader.
    await opened.stream[Symbol.asyncIterator]().return?.();
  }
}
