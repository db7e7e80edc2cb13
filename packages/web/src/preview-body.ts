import { Readable } from "node:stream";

/**
 * A preview's body: exactly `size` bytes of `stream` (the size the file had when it was opened
 * and checked, which the answer's `Content-Length` promises). A file that shrank since ends its
 * stream early: the body then fails instead of ending, so the answer is cut off and the browser
 * shows a failed load, not a truncated file as if whole. `onShort` is told how many bytes went.
 * Bytes past `size` (a file that grew) are not sent.
 */
export function previewBody(
  stream: NodeJS.ReadableStream,
  size: number,
  onShort: (sent: number) => void,
): Readable {
  return Readable.from(exactly(stream, size, onShort), { objectMode: false });
}

async function* exactly(
  stream: NodeJS.ReadableStream,
  size: number,
  onShort: (sent: number) => void,
): AsyncGenerator<Buffer> {
  let sent = 0;
  if (size > 0) {
    for await (const chunk of stream) {
      const part = (chunk as Buffer).subarray(0, size - sent);
      sent += part.length;
      if (part.length > 0) yield part;
      if (sent >= size) return;
    }
  }
  if (sent < size) {
    onShort(sent);
    throw new Error(`the file shrank after it was opened: ${sent} of its ${size} bytes were left`);
  }
}
