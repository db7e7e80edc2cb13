import type { ChoiceAnswer, ChoicePress } from "../channels/types.js";
import { type ChoiceData, parseChoiceData } from "./choice-data.js";

/** Answers a press of one kind of button; `data` is parsed, the rest of `press` as received. */
export type ChoiceHandler = (press: ChoicePress, data: ChoiceData) => Promise<ChoiceAnswer>;

/** What a press of a button nobody handles (any more) is told. */
export const UnknownChoiceText = "This button does nothing any more.";

/**
 * Routes button presses to a handler by the data's `kind` (docs/approvals.md, "Buttons").
 * Data that does not parse, or names a kind nobody registered, is refused politely: a
 * forged press learns nothing. A handler that throws is refused the same way (and logged by
 * the caller's `onError`).
 */
export class ChoiceRouter {
  readonly #handlers = new Map<string, ChoiceHandler>();

  constructor(private readonly onError: (error: unknown, press: ChoicePress) => void = () => {}) {}

  /** Registers the handler of `kind`; a kind has one handler. */
  on(kind: string, handler: ChoiceHandler): this {
    if (this.#handlers.has(kind)) throw new Error(`choice kind "${kind}" has a handler already`);
    this.#handlers.set(kind, handler);
    return this;
  }

  /** Answers one press. Never rejects. */
  async press(press: ChoicePress): Promise<ChoiceAnswer> {
    const data = parseChoiceData(press.data);
    const handler = data === undefined ? undefined : this.#handlers.get(data.kind);
    if (data === undefined || handler === undefined)
      return { kind: "refused", notice: UnknownChoiceText };
    try {
      return await handler(press, data);
    } catch (error) {
      this.onError(error, press);
      return { kind: "refused", notice: "That did not work; try again, or type the command." };
    }
  }
}
