import type { PlannedItem } from "@mediagate/media";
import type { DeliveryView, FileView } from "@mediagate/web";
import type { OutboxRecord } from "../durable/types.js";
import { InBrowser, printable } from "../printable.js";
import { maskPairingCodes } from "../state/pairing.js";

/** Characters of a reply's text the deliveries page shows. */
const ReplyTextChars = 600;

/** Where delivery looked for a missing file (`index` of the reply's plan, its tagged `path`). */
export type TriedPaths = (
  record: OutboxRecord,
  index: number,
  path: string,
) => Promise<readonly string[]>;

/**
 * One reply as the Deliveries page shows it (docs/web-console.md). File names, paths, reasons
 * and the last error are escaped (src/printable.ts): the agent names its files, so a bidi
 * override in one would show `report.txt` for a file saved as `report\u202etxt.exe`, and that
 * name is also the one the page's download link saves under. The reply's text is shown as it
 * was sent, line breaks and all (docs/security.md), but for the pairing codes in the gateway's
 * own answers, which are masked.
 */
export async function deliveryView(record: OutboxRecord, tried: TriedPaths): Promise<DeliveryView> {
  const items = record.plan?.items ?? [];
  const files: FileView[] = [];
  for (const [index, item] of items.entries())
    files.push(await fileView(record, item, index, tried));
  const sent = record.plan?.text ?? record.text;
  // The gateway's own words may hold a pairing code: the one an unknown user was given, or
  // one an admin typed. Codes never appear in the console (docs/security.md, "Pairing").
  const text = record.plain === true ? maskPairingCodes(sent) : sent;
  return {
    id: record.id,
    profile: record.profile,
    platform: record.platform,
    sessionKey: record.sessionKey,
    createdMs: record.createdAtMs,
    state: record.state,
    attempts: record.attempts,
    lastError: record.lastError === undefined ? undefined : shown(record.lastError),
    text: text.length > ReplyTextChars ? `${text.slice(0, ReplyTextChars - 1)}…` : text,
    files,
  };
}

async function fileView(
  record: OutboxRecord,
  item: PlannedItem,
  index: number,
  tried: TriedPaths,
): Promise<FileView> {
  switch (item.status) {
    case "ready":
      return {
        status:
          record.state === "delivered"
            ? "delivered"
            : record.state === "pending"
              ? "pending"
              : "failed",
        index,
        name: shown(item.filename),
        kind: item.kind,
        mime: item.mime,
        size: item.size,
      };
    case "denied":
      return { status: "withheld", index, reason: shown(item.reason) };
    case "too_large":
      return {
        status: "too_large",
        index,
        path: shown(item.path),
        size: item.size,
        limit: item.limit,
      };
    case "unreachable":
      return {
        status: "missing",
        index,
        path: shown(item.path),
        tried: (item.reason === "over_max_files"
          ? ["not looked for: the reply named more files than are sent"]
          : await tried(record, index, item.path)
        ).map(shown),
      };
  }
}

function shown(text: string): string {
  return printable(text, InBrowser);
}
