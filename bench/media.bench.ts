/**
 * `pnpm bench:media`: MEDIA extraction on normal and adversarial 1 MB replies, and path
 * translation throughput on a real temp layout. Prints one JSON object per figure per line.
 * Figures, not assertions: nothing here fails on time. Needs `pnpm --filter @mediagate/media build`.
 * `ms` is the median wall time of 9 runs (after 3 warm-ups), `cpu_ms` the median CPU time of
 * the process over the same runs (closer to the idle-machine figure on a loaded host).
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { extractMedia, planMedia, type TranslateContext, telegramLimits } from "@mediagate/media";

const MB = 1024 * 1024;

function print(figure: Record<string, unknown>): void {
  console.log(JSON.stringify(figure));
}

/** Repeat `unit` until the text reaches 1 MiB. */
function fill(unit: string): string {
  return unit.repeat(Math.ceil(MB / unit.length)).slice(0, MB);
}

function normalReply(): string {
  const paragraph =
    "Here is the analysis you asked for. The chart below compares the quarterly figures, " +
    "and the `summary.csv` file holds the raw numbers. Run `python plot.py --out chart.png` to redo it.\n\n" +
    "```python\nimport pandas as pd\ndf = pd.read_csv('data.csv')  # MEDIA:/workspace/not-a-tag.png\n```\n\n" +
    "> Note: MEDIA:/workspace/quoted.png is only quoted.\n\n" +
    'Chart: MEDIA:/workspace/out/chart.png and the report MEDIA:"/workspace/out/q3 report.pdf".\n\n';
  return fill(paragraph);
}

function backtickRunsOfEveryLength(): string {
  let out = "";
  for (let n = 1; out.length < MB; n++) out += `${"`".repeat(n)}a`;
  return out.slice(0, MB);
}

const SHAPES: Record<string, () => string> = {
  normal_prose: normalReply,
  "media_x_space_one_line (reference: 2.2 s on 36 KB)": () => fill("MEDIA:/x "),
  media_no_space: () => fill("MEDIA:"),
  media_distinct_tags: () => {
    let out = "";
    for (let i = 0; out.length < MB; i++) out += `MEDIA:/workspace/f${i}.png `;
    return out.slice(0, MB);
  },
  unclosed_double_quote: () => fill('MEDIA:"a '),
  single_quote_pairs: () => fill("MEDIA:'"),
  backtick_quote_pairs: () => fill("MEDIA:`"),
  backtick_runs_every_length: backtickRunsOfEveryLength,
  lone_backticks: () => fill("`a"),
  fence_lines: () => fill("```\n"),
  blockquote_lines: () => fill("> MEDIA:/x\n"),
  newlines_only: () => fill("\n"),
  crlf_blank_lines: () => fill("\r\n"),
  spaces_after_marker: () => `MEDIA:${" ".repeat(MB - 7)}x`,
  directive_prefixes: () => fill("[[as_docu[[audio_as_voice"),
  cjk_punctuation: () => fill("图MEDIA:/a.png。"),
};

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function benchExtraction(): void {
  for (const [shape, build] of Object.entries(SHAPES)) {
    const reply = build();
    const bytes = Buffer.byteLength(reply);
    for (let i = 0; i < 3; i++) extractMedia(reply).render(new Set());
    const times: number[] = [];
    const cpuTimes: number[] = [];
    let tags = 0;
    for (let i = 0; i < 9; i++) {
      const cpu = process.cpuUsage();
      const started = performance.now();
      const result = extractMedia(reply);
      result.render(new Set());
      times.push(performance.now() - started);
      const used = process.cpuUsage(cpu);
      cpuTimes.push((used.user + used.system) / 1000);
      tags = result.tags.length;
    }
    const ms = median(times);
    print({
      bench: "extract",
      shape,
      bytes,
      tags,
      ms: round(ms),
      max_ms: round(Math.max(...times)),
      cpu_ms: round(median(cpuTimes)),
      mb_per_s: round(bytes / MB / (ms / 1000)),
    });
  }
}

async function benchTranslation(): Promise<void> {
  const root = await mkdtemp(path.join(os.tmpdir(), "mediagate-bench-"));
  try {
    const home = path.join(root, "home");
    const slots = ["shared_k", "default", "session_s"].map((s) =>
      path.join(home, "sandboxes/docker", s),
    );
    for (const slot of slots) {
      await mkdir(path.join(slot, "workspace/out"), { recursive: true });
      await mkdir(path.join(slot, "home"), { recursive: true });
    }
    await mkdir(path.join(root, "tmp"));
    const files = 20;
    for (let i = 0; i < files; i++) {
      await writeFile(path.join(slots[1]!, `workspace/out/f${i}.png`), Buffer.alloc(2048, i));
    }
    const ctx: TranslateContext = {
      backend: "docker",
      slotDirs: slots,
      volumes: [],
      allowDirs: [],
      protectedHomes: [home],
      tmpDir: path.join(root, "tmp"),
      maxFiles: files,
    };
    const limits = telegramLimits();
    const cases = {
      found_in_profile_slot: Array.from(
        { length: files },
        (_, i) => `MEDIA:/workspace/out/f${i}.png`,
      ),
      missing_everywhere: Array.from(
        { length: files },
        (_, i) => `MEDIA:/workspace/none/g${i}.png`,
      ),
      denied_by_policy: Array.from({ length: files }, (_, i) => `MEDIA:/root/.ssh/k${i}`),
    };
    for (const [shape, tags] of Object.entries(cases)) {
      const reply = tags.join("\n");
      for (let i = 0; i < 20; i++) await (await planMedia(reply, ctx, limits)).dispose();
      const iterations = 200;
      const started = performance.now();
      for (let i = 0; i < iterations; i++) await (await planMedia(reply, ctx, limits)).dispose();
      const seconds = (performance.now() - started) / 1000;
      print({
        bench: "translate",
        shape,
        tags_per_plan: tags.length,
        translations_per_s: Math.round((iterations * tags.length) / seconds),
        plan_ms: round((seconds * 1000) / iterations),
      });
    }
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

print({
  bench: "env",
  node: process.version,
  cpus: os.cpus().length,
  loadavg: os.loadavg().map(round),
});
benchExtraction();
await benchTranslation();
