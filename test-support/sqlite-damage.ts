import { closeSync, openSync, readSync, statSync, writeSync } from "node:fs";

/**
 * Damage done to a closed SQLite file the way a failing disk or a stray write does it: bytes
 * overwritten in place, at offsets computed from the file's own header (no SQLite needed, so
 * every package's tests can use it).
 */

/** The page size the header names (bytes 16-17, big-endian; 1 means 65536). */
export function pageSizeOf(path: string): number {
  const header = Buffer.alloc(100);
  const fd = openSync(path, "r");
  try {
    readSync(fd, header, 0, 100, 0);
  } finally {
    closeSync(fd);
  }
  const size = header.readUInt16BE(16);
  return size === 1 ? 65536 : size;
}

/** How many pages the file holds (its size over the page size). */
export function pageCountOf(path: string): number {
  return Math.floor(statSync(path).size / pageSizeOf(path));
}

function overwrite(path: string, offset: number, bytes: Buffer): void {
  const fd = openSync(path, "r+");
  try {
    writeSync(fd, bytes, 0, bytes.length, offset);
  } finally {
    closeSync(fd);
  }
}

/** Overwrites the header's first 16 bytes, the `SQLite format 3\0` magic. */
export function damageHeader(path: string): void {
  overwrite(path, 0, Buffer.from("not a database!!"));
}

/** Overwrites page `page` (1-based) whole with a byte pattern no valid page has. */
export function damagePage(path: string, page: number): void {
  const size = pageSizeOf(path);
  overwrite(path, (page - 1) * size, Buffer.alloc(size, 0xa5));
}
