/**
 * Usage: each profile's model calls per UTC day as two small SVG bar charts, tokens (input and
 * output stacked) and cost, with the daily budget as a line; a table of the same numbers below.
 * Hand-drawn SVG: two bar charts do not justify a charting library (docs/web-console.md).
 */
import { html } from "htm/preact";
import type { UsageDayView, UsageView } from "../../src/types.js";
import { useFetched, useLiveState } from "../hooks.js";

const Width = 720;
const Height = 160;
const Axis = 48;

const integer = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const cost = (value: number) => value.toFixed(value !== 0 && value < 1 ? 4 : 2);

interface Series {
  readonly label: string;
  readonly parts: readonly {
    readonly value: (day: UsageDayView) => number;
    readonly tone: string;
  }[];
  readonly format: (value: number) => string;
  readonly limit: number | undefined;
}

function BarChart({
  days,
  series,
  name,
}: {
  days: readonly UsageDayView[];
  series: Series;
  name: string;
}) {
  const totals = days.map((day) => series.parts.reduce((sum, part) => sum + part.value(day), 0));
  const top = Math.max(...totals, series.limit ?? 0, 1e-9);
  const slot = (Width - Axis) / Math.max(days.length, 1);
  const y = (value: number) => Height - (value / top) * (Height - 12);
  return html`
    <figure class="chart">
      <figcaption>${series.label}</figcaption>
      <svg viewBox="0 0 ${Width} ${Height + 18}" role="img" data-testid=${`chart-${name}`}
        aria-label=${`${series.label} per day`}>
        <text x="0" y="12" class="axis">${series.format(top)}</text>
        <text x="0" y=${Height} class="axis">0</text>
        ${days.map((day, index) => {
          let base = Height;
          const x = Axis + index * slot + 1;
          return html`<g data-testid="bar" data-day=${day.day} data-value=${totals[index]}>
            <title>${day.day}: ${series.format(totals[index] ?? 0)}</title>
            ${series.parts.map((part) => {
              const h = Height - y(part.value(day));
              base -= h;
              return html`<rect class=${`bar ${part.tone}`} x=${x} y=${base} width=${Math.max(slot - 2, 1)} height=${h} />`;
            })}
          </g>`;
        })}
        ${
          series.limit !== undefined &&
          html`<line class="budget" data-testid="budget" x1=${Axis} x2=${Width} y1=${y(series.limit)} y2=${y(series.limit)} />`
        }
        <text x=${Axis} y=${Height + 14} class="axis">${days[0]?.day ?? ""}</text>
        <text x=${Width} y=${Height + 14} class="axis end">${days.at(-1)?.day ?? ""}</text>
      </svg>
    </figure>`;
}

export function Usage() {
  const live = useLiveState();
  const [usage, error] = useFetched<UsageView>("/api/usage", live.changed.deliveries ?? 0);
  return html`
    <section>
      <h2>Usage <span class="muted">(UTC days)</span></h2>
      ${error && html`<p class="error">${error}</p>`}
      ${
        usage === undefined
          ? html`<p class="muted">Loading…</p>`
          : usage.profiles.length === 0
            ? html`<p class="muted">No profile talks to a model.</p>`
            : usage.profiles.map(
                (p) => html`<article data-testid="usage" data-profile=${p.profile}>
                  <h3>${p.profile}</h3>
                  <${BarChart} name="tokens" days=${p.days} series=${{
                    label: "Tokens (input, output)",
                    parts: [
                      { value: (d: UsageDayView) => d.inputTokens, tone: "input" },
                      { value: (d: UsageDayView) => d.outputTokens, tone: "output" },
                    ],
                    format: (v: number) => integer.format(v),
                    limit: p.budget?.dailyTokens,
                  }} />
                  <${BarChart} name="cost" days=${p.days} series=${{
                    label: "Cost",
                    parts: [{ value: (d: UsageDayView) => d.cost, tone: "cost" }],
                    format: cost,
                    limit: p.budget?.dailyCost,
                  }} />
                  <table class="rows">
                    <thead><tr><th>Day</th><th>Calls</th><th>Input</th><th>Cached</th><th>Output</th><th>Cost</th></tr></thead>
                    <tbody>
                      ${p.days
                        .filter((d) => d.calls > 0)
                        .reverse()
                        .map(
                          (d) => html`<tr data-testid="usage-day" data-day=${d.day}>
                            <td data-label="Day">${d.day}</td><td data-label="Calls">${d.calls}</td>
                            <td data-label="Input">${integer.format(d.inputTokens)}</td>
                            <td data-label="Cached">${integer.format(d.cachedTokens)}</td>
                            <td data-label="Output">${integer.format(d.outputTokens)}</td>
                            <td data-label="Cost">${cost(d.cost)}</td></tr>`,
                        )}
                    </tbody>
                  </table>
                </article>`,
              )
      }
    </section>`;
}
