import { describe, expect, it } from "vitest";
import { batchFiles } from "./batches.js";

const file = (name: string, size: number) => ({ name, size });

describe("batchFiles", () => {
  it("puts at most ten files in a message: twelve files make two messages", () => {
    const files = Array.from({ length: 12 }, (_, index) => file(`f${index}`, 1));
    const { batches, tooLarge } = batchFiles(files, 100);
    expect(batches.map((batch) => batch.length)).toEqual([10, 2]);
    expect(batches.flat().map((item) => item.name)).toEqual(files.map((item) => item.name));
    expect(tooLarge).toEqual([]);
  });

  it("starts a new message when the next file would push the request over the limit", () => {
    const { batches } = batchFiles([file("a", 6), file("b", 5), file("c", 4), file("d", 1)], 10);
    expect(batches.map((batch) => batch.map((item) => item.name))).toEqual([
      ["a"],
      ["b", "c", "d"],
    ]);
  });

  it("sets aside a file over the limit on its own and keeps the order of the rest", () => {
    const { batches, tooLarge } = batchFiles([file("a", 3), file("big", 11), file("b", 3)], 10);
    expect(tooLarge.map((item) => item.name)).toEqual(["big"]);
    expect(batches.map((batch) => batch.map((item) => item.name))).toEqual([["a", "b"]]);
  });

  it("gives no message for no files", () => {
    expect(batchFiles([], 10).batches).toEqual([]);
  });
});
