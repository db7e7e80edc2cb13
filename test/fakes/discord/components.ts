import { isRecord } from "./requests.js";

/** A button as the fake keeps it on a message (type 2). */
export interface FakeButton {
  readonly type: 2;
  readonly style: number;
  readonly label: string;
  readonly custom_id: string;
}

/** An action row (type 1) of buttons. */
export interface FakeActionRow {
  readonly type: 1;
  readonly components: readonly FakeButton[];
}

const Limits = { rows: 5, perRow: 5, customId: 100, label: 80 } as const;

/**
 * Reads a message's `components` as Discord validates them: at most 5 action rows (type 1) of
 * at most 5 buttons (type 2) each; a button has a style 1–4 with a `custom_id` of 1–100
 * characters unique in the message and a label of at most 80. Absent: `undefined`; anything
 * else answers the 400 50035 field that failed. Only action rows of buttons are modelled.
 */
export function componentsOf(
  value: unknown,
): { rows: FakeActionRow[] | undefined } | { error: string } {
  if (value === undefined || value === null) return { rows: undefined };
  if (!Array.isArray(value) || value.length > Limits.rows) return { error: "components" };
  const rows: FakeActionRow[] = [];
  const ids = new Set<string>();
  for (const [r, row] of value.entries()) {
    if (!isRecord(row) || row.type !== 1 || !Array.isArray(row.components)) {
      return { error: `components.${r}` };
    }
    if (row.components.length < 1 || row.components.length > Limits.perRow) {
      return { error: `components.${r}.components` };
    }
    const buttons: FakeButton[] = [];
    for (const [b, button] of row.components.entries()) {
      const at = `components.${r}.components.${b}`;
      if (!isRecord(button) || button.type !== 2) return { error: at };
      const { style, label, custom_id: customId } = button;
      if (typeof style !== "number" || style < 1 || style > 4) return { error: `${at}.style` };
      if (
        typeof customId !== "string" ||
        customId === "" ||
        customId.length > Limits.customId ||
        ids.has(customId)
      ) {
        return { error: `${at}.custom_id` };
      }
      if (typeof label !== "string" || label.length > Limits.label) return { error: `${at}.label` };
      ids.add(customId);
      buttons.push({ type: 2, style, label, custom_id: customId });
    }
    rows.push({ type: 1, components: buttons });
  }
  return { rows };
}
