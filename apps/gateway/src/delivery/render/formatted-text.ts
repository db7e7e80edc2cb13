/**
 * Text with styled ranges, the way Telegram models a message (`MessageEntity`): the visible
 * text and entities by UTF-16 offset. The Markdown renderer builds it, the splitter cuts it
 * and the HTML serializer writes it; markup is only ever made from this, never from the text.
 */

/** The entity types the renderer produces (a subset of Telegram's). */
export type EntityType =
  | "bold"
  | "italic"
  | "underline"
  | "strikethrough"
  | "code"
  | "pre"
  | "text_link"
  | "blockquote";

/** A styled range of {@link FormattedText.text}, in UTF-16 code units. */
export interface TextEntity {
  readonly type: EntityType;
  readonly offset: number;
  readonly length: number;
  /** `pre`: the code block's language, if any. */
  readonly language?: string | undefined;
  /** `text_link`: where it points. */
  readonly url?: string | undefined;
}

/**
 * Visible text and its entities. Entities nest properly (two that share a character: one
 * holds the other), sorted by offset, the outer first.
 */
export interface FormattedText {
  readonly text: string;
  readonly entities: readonly TextEntity[];
}

/** Sorts entities by offset, the longer (outer) first at the same offset. */
export function sortEntities(entities: readonly TextEntity[]): TextEntity[] {
  return [...entities].sort((a, b) => a.offset - b.offset || b.length - a.length);
}

/** The part of `formatted` in `[start, end)`: entities clipped to it, empty ones dropped. */
export function sliceFormatted(
  formatted: FormattedText,
  start: number,
  end: number,
): FormattedText {
  const entities: TextEntity[] = [];
  for (const entity of formatted.entities) {
    const from = Math.max(start, entity.offset);
    const to = Math.min(end, entity.offset + entity.length);
    if (to <= from) continue;
    entities.push({ ...entity, offset: from - start, length: to - from });
  }
  return { text: formatted.text.slice(start, end), entities };
}

/** `formatted` followed by `suffix`, unstyled. */
export function appendPlain(formatted: FormattedText, suffix: string): FormattedText {
  return { text: formatted.text + suffix, entities: formatted.entities };
}
