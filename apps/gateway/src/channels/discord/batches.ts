/** Discord's attachment count per message. */
export const MaxFilesPerMessage = 10;

export interface Batching<T> {
  /** Files grouped into messages, plan order kept. */
  readonly batches: T[][];
  /** Files over the limit on their own; never sent. */
  readonly tooLarge: T[];
}

/**
 * Groups files into messages of at most `maxFiles` attachments whose sizes add up to at most
 * `limitBytes` (Discord applies the upload limit to the whole request), in order: a file that
 * does not fit starts the next message. A file over the limit on its own is set aside.
 */
export function batchFiles<T extends { readonly size: number }>(
  files: readonly T[],
  limitBytes: number,
  maxFiles: number = MaxFilesPerMessage,
): Batching<T> {
  const batches: T[][] = [];
  const tooLarge: T[] = [];
  let current: T[] = [];
  let currentBytes = 0;
  for (const file of files) {
    if (file.size > limitBytes) {
      tooLarge.push(file);
      continue;
    }
    if (current.length === maxFiles || currentBytes + file.size > limitBytes) {
      batches.push(current);
      current = [];
      currentBytes = 0;
    }
    current.push(file);
    currentBytes += file.size;
  }
  if (current.length > 0) batches.push(current);
  return { batches, tooLarge };
}
