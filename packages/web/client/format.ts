/** How the pages show times, sizes and states. */
import { html } from "htm/preact";

/** `3m 07s ago`, or `never`. */
export function ago(ms: number | undefined, now = Date.now()): string {
  if (ms === undefined) return "never";
  return `${elapsed(now - ms)} ago`;
}

/** A duration: `42s`, `3m 07s`, `2h 05m`. */
export function elapsed(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

/** A size in B, KiB, MiB or GiB; `—` when unknown. */
export function bytes(n: number | undefined): string {
  if (n === undefined) return "—";
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 ** 3) return `${(n / 1024 / 1024).toFixed(1)} MiB`;
  return `${(n / 1024 ** 3).toFixed(2)} GiB`;
}

/** A state as a coloured label (`tone`: good, warn, bad, or none). */
export const badge = (text: string, tone: string) =>
  html`<span class="badge ${tone}" data-testid="badge">${text}</span>`;
