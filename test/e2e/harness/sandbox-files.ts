import { tinyPng } from "../../fakes/telegram/media-fixtures.js";

/** A `printf` format that writes exactly `bytes` (every byte as an octal escape). */
export const printfOf = (bytes: Buffer): string =>
  [...bytes].map((b) => `\\${b.toString(8).padStart(3, "0")}`).join("");

/** A PNG with `extra` bytes after IEND: still a PNG by its magic, but distinct content. */
export const pngWith = (extra: Buffer): Buffer => Buffer.concat([tinyPng(), extra]);

/** A shell line that writes `bytes` to `path` in the sandbox (base64, any bytes). */
export const writeCommand = (path: string, bytes: Buffer): string =>
  `echo ${bytes.toString("base64")} | base64 -d > ${path}`;

/** The notice a chat gets for a file the delivery policy refused. */
export const WithheldNotice = "An attachment was withheld";

/** The notice for a file the session that named it could not read itself. */
export const UnreadableNotice =
  "⚠️ An attachment was withheld: this session cannot read that file in the sandbox.";
