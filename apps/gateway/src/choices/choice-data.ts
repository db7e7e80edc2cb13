import { randomBytes } from "node:crypto";
import { ChoiceDataMaxBytes } from "../channels/types.js";

/**
 * The data a choice button carries: `<kind>:<id>:<option>`, e.g. `ap:Xk3…:once`. `kind` routes
 * a press to its handler (choices/router.ts), `id` names what is being decided (a random
 * {@link choiceId} where guessing it would matter: the receiver looks it up and checks the chat),
 * `option` is the button. Everything ASCII, at most {@link ChoiceDataMaxBytes} bytes.
 */
export interface ChoiceData {
  readonly kind: string;
  readonly id: string;
  readonly option: string;
}

const Kind = /^[a-z]{1,8}$/;
const Id = /^[A-Za-z0-9_-]{1,40}$/;
const Option = /^[a-z0-9]{1,8}$/;

/** Builds a button's data; throws on a part outside the grammar (a programming error). */
export function formatChoiceData(data: ChoiceData): string {
  if (!Kind.test(data.kind) || !Id.test(data.id) || !Option.test(data.option)) {
    throw new TypeError(`choice data out of grammar: ${JSON.stringify(data)}`);
  }
  const text = `${data.kind}:${data.id}:${data.option}`;
  if (text.length > ChoiceDataMaxBytes)
    throw new TypeError(`choice data over ${ChoiceDataMaxBytes} bytes`);
  return text;
}

/** Reads a press's data; `undefined` for anything not built by {@link formatChoiceData}. */
export function parseChoiceData(text: string): ChoiceData | undefined {
  if (text.length > ChoiceDataMaxBytes) return undefined;
  const parts = text.split(":");
  if (parts.length !== 3) return undefined;
  const [kind, id, option] = parts as [string, string, string];
  if (!Kind.test(kind) || !Id.test(id) || !Option.test(option)) return undefined;
  return { kind, id, option };
}

/** A new unguessable id: 128 random bits, base64url (22 characters). */
export function choiceId(): string {
  return randomBytes(16).toString("base64url");
}
