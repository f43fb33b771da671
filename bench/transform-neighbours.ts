/**
 * Neighbours of a transform bomb (issue 19; docs/transforms.md "Suspension"): the latency of a
 * cheap transform (the bench transform of bench/sandbox-cost.ts, several of them, as other proxies'
 * transforms) on one instance while a bomb (one builtin call the interrupt handler never stops,
 * always killed at the hard deadline) is called again and again, before (suspension off,
 * TRANSFORM_SUSPEND_KILLS=0) and after (the default policy), beside a run without the bomb.
 *
 * Each run is a new `node` process importing the bundled asset's `sandbox.mjs` (cdk/bundle.ts, as
 * Lambda runs it: the worker starts in tens of ms, not through tsx). An instance serves one request
 * at a time, so the traffic is sequential: each round calls the bomb once, then each neighbour
 * once; a neighbour's time runs from its call to its answer (a worker restarting after a kill and
 * the neighbour's compile on it included). `npx tsx bench/transform-neighbours.ts [rounds]`.
 * A benchmark, not a test: it asserts nothing.
 */
import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { pathToFileURL } from "node:url";
import { buildDataPlaneBundle } from "./bundle-report.ts";
import { BENCH_TRANSFORM } from "./sandbox-cost.ts";
import { sandboxFileOf } from "./transforms.ts";

const BOMB = "export default () => new Array(1e6).fill(7).join(',').length";
const NEIGHBOURS = 3;

interface RunFigures {
  /** Every neighbour call, sorted, ms. */
  neighbourMs: number[];
  /** Every bomb call, sorted, ms. */
  bombMs: number[];
  kills: number;
  suspended: number;
}

function runOnce(sandboxFile: string, rounds: number, bomb: boolean, suspendKills: string): RunFigures {
  const script = `
const sandbox = await import(${JSON.stringify(pathToFileURL(sandboxFile).href)});
const args = [{ clientId: "c1" }, { headers: {}, body: { user_name: "ada" } }];
const neighbours = [];
for (let i = 0; i < ${NEIGHBOURS}; i++) neighbours.push(await sandbox.compileTransform("neighbour-" + i, ${JSON.stringify(BENCH_TRANSFORM)}));
const bomb = await sandbox.compileTransform("bomb", ${JSON.stringify(BOMB)});
for (const n of neighbours) await sandbox.runTransform(n, args);
const neighbourMs = [];
const bombMs = [];
let suspended = 0;
for (let round = 0; round < ${rounds}; round++) {
  if (${bomb}) {
    const t = performance.now();
    const result = await sandbox.runTransform(bomb, []);
    bombMs.push(performance.now() - t);
    if (!result.ok && result.reason === "suspended") suspended++;
  }
  for (const n of neighbours) {
    const t = performance.now();
    const result = await sandbox.runTransform(n, args);
    neighbourMs.push(performance.now() - t);
    if (!result.ok) throw new Error(result.message);
  }
}
process.stdout.write(JSON.stringify({ neighbourMs, bombMs, kills: sandbox.sandboxStats().kills, suspended }));
process.exit(0);`;
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], {
    cwd: tmpdir(),
    encoding: "utf8",
    env: { PATH: process.env.PATH, LOG_LEVEL: "silent", TRANSFORM_SUSPEND_KILLS: suspendKills },
  });
  const figures = JSON.parse(out) as RunFigures;
  figures.neighbourMs.sort((a, b) => a - b);
  figures.bombMs.sort((a, b) => a - b);
  return figures;
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? Number.NaN;

const line = (label: string, figures: RunFigures) =>
  `${label.padEnd(34)} neighbours p50 ${percentile(figures.neighbourMs, 50).toFixed(2)} ms, p95 ${percentile(figures.neighbourMs, 95).toFixed(2)} ms, max ${figures.neighbourMs.at(-1)!.toFixed(1)} ms` +
  (figures.bombMs.length > 0
    ? `; bomb p50 ${percentile(figures.bombMs, 50).toFixed(2)} ms; worker kills ${figures.kills}, suspended answers ${figures.suspended}`
    : "");

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const rounds = Number(process.argv[2] ?? 40);
  const bundle = await buildDataPlaneBundle();
  try {
    const sandboxFile = sandboxFileOf(bundle.outdir);
    console.log(
      `Neighbours of a transform bomb: ${rounds} rounds of (bomb once, then each of ${NEIGHBOURS} cheap transforms once), bundled sandbox.mjs, one process each:`,
    );
    console.log(line("no bomb", runOnce(sandboxFile, rounds, false, "3")));
    console.log(line("bomb, suspension off (before)", runOnce(sandboxFile, rounds, true, "0")));
    console.log(line("bomb, suspension on (after)", runOnce(sandboxFile, rounds, true, "3")));
  } finally {
    rmSync(bundle.outdir, { recursive: true, force: true });
  }
}
