import { type Document, isAlias, isMap, isScalar, isSeq, type LineCounter } from "yaml";

/** A place in the config file, both 1-based, the way editors and terminals link it. */
export interface Position {
  readonly line: number;
  readonly column: number;
}

/** Where the setting at a key path (`["profiles", 1, "sandbox"]`) is written in the file. */
export type Locate = (keys: readonly PropertyKey[]) => Position | undefined;

/**
 * A {@link Locate} over a parsed YAML document: the key of the deepest mapping entry on the
 * path that the file has (so a wrong value, an unknown key and a `${VAR}` that is unset are
 * all placed at the key that holds them), or the item of a list; a path whose end the file
 * lacks (a missing required key, a value from the environment) is placed at the closest entry
 * above it. Aliases are followed to their anchor.
 */
export function locatorOf(doc: Document, lines: LineCounter): Locate {
  return (keys) => {
    let node: unknown = doc.contents;
    let offset = startOf(node);
    for (const key of keys) {
      if (isAlias(node)) node = node.resolve(doc);
      if (isMap(node)) {
        const pair = node.items.find(
          (item) => String(isScalar(item.key) ? item.key.value : item.key) === String(key),
        );
        if (pair === undefined) break;
        offset = startOf(pair.key) ?? offset;
        node = pair.value;
      } else if (isSeq(node) && typeof key === "number") {
        const item: unknown = node.items[key];
        if (item === undefined) break;
        offset = startOf(item) ?? offset;
        node = item;
      } else break;
    }
    if (offset === undefined) return undefined;
    const { line, col } = lines.linePos(offset);
    return { line, column: col };
  };
}

function startOf(node: unknown): number | undefined {
  if (node === null || typeof node !== "object" || !("range" in node)) return undefined;
  const range = (node as { range?: readonly number[] | null }).range;
  return range?.[0];
}
