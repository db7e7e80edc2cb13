import type { MediaKind } from "@mediagate/media";

/** Telegram Bot API limits that shape a delivery (UTF-16 units, items). */
export const TelegramTextLimits = {
  messageLength: 4096,
  captionLength: 1024,
  albumSize: 10,
} as const;

/** A media message: one item by its kind, or an album of photos. */
export type MediaStep =
  | { readonly type: "single"; readonly index: number; readonly caption?: string | undefined }
  | {
      readonly type: "album";
      readonly indices: readonly number[];
      readonly caption?: string | undefined;
    };

/** One thing to send, in order. Indices point into the plan's ready items. */
export type DeliveryStep = { readonly type: "text"; readonly text: string } | MediaStep;

/**
 * Orders a reply for Telegram (docs/media.md):
 *
 * - Photos go together as albums (sendMediaGroup) of up to 10, sent where the first photo
 *   stands in the plan; a lone photo (or a lone leftover after full albums) is a sendPhoto.
 *   Every other item is sent alone, by its kind, in plan order.
 * - The reply text rides as the caption of the first media message when it fits in 1024
 *   UTF-16 units. Otherwise it is sent first, as messages split at 4096, and no media gets a
 *   caption: the reader sees the whole text before the files it talks about, never half a
 *   text in a caption and the rest in a message below.
 * - With no media, the text is all there is.
 */
export function planDeliverySteps(text: string, kinds: readonly MediaKind[]): DeliveryStep[] {
  const media: MediaStep[] = [];
  const photos = kinds.flatMap((kind, index) => (kind === "photo" ? [index] : []));
  kinds.forEach((kind, index) => {
    if (kind !== "photo") {
      media.push({ type: "single", index });
      return;
    }
    if (index !== photos[0]) return;
    for (let start = 0; start < photos.length; start += TelegramTextLimits.albumSize) {
      const group = photos.slice(start, start + TelegramTextLimits.albumSize);
      const [only] = group;
      media.push(
        group.length === 1 && only !== undefined
          ? { type: "single", index: only }
          : { type: "album", indices: group },
      );
    }
  });
  const hasText = text.trim() !== "";
  const [first, ...rest] = media;
  if (first === undefined) return hasText ? [{ type: "text", text }] : [];
  if (!hasText) return media;
  if (text.length <= TelegramTextLimits.captionLength) {
    return [{ ...first, caption: text }, ...rest];
  }
  return [{ type: "text", text }, ...media];
}
