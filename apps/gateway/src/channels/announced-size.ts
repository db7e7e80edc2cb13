import { AttachmentFetchError } from "./types.js";

/**
 * The chunks of `source`, then an {@link AttachmentFetchError} if fewer bytes came than the
 * platform announced (`announcedBytes`: Telegram's `file_size`, Discord's attachment `size`).
 * A body without `Content-Length` that ends in a clean close, or a local file still being
 * written, looks whole to the transport; only the announced size shows it was cut short, and
 * a short file must not be saved as the file the user sent. The error comes after the last
 * chunk, so the inbox drops what it wrote. More bytes than announced are passed on (the
 * receiving limit bounds them): only a short file is known to be wrong.
 */
export async function* checkedAgainstAnnounced(
  source: AsyncIterable<Uint8Array>,
  announcedBytes: number | undefined,
  platform: string,
): AsyncGenerator<Uint8Array> {
  let received = 0;
  for await (const chunk of source) {
    received += chunk.length;
    yield chunk;
  }
  if (announcedBytes !== undefined && received < announcedBytes) {
    throw new AttachmentFetchError(
      `only ${received} of the ${announcedBytes} bytes ${platform} announced arrived`,
    );
  }
}
