/**
 * The transform sandbox's cost (issue 10, "Benchmark"): the cold first call on an instance (module
 * load, compile, first call) and the warm cost per call of a small request transform (add a
 * header, rename a JSON field), with its arguments passed in and its result read out as JSON.
 *
 * `npx tsx bench/sandbox-cost.ts` prints both; `sandboxCost()` is what the main bench calls. The
 * cold figure is only cold when nothing loaded the sandbox module before in the process
 * (`coldIsCold` says whether it was); from the TypeScript sources it includes starting tsx's
 * loader in the worker thread (bench/transforms.ts measures the bundled cold call).
 */
import { pathToFileURL } from "node:url";
import {
  compileTransform,
  disposeTransform,
  runTransform,
  sandboxModuleLoads,
} from "#lib/data-plane/sandbox.ts";

/** Goal of issue 10: warm cost per call of such a transform. */
export const WARM_GOAL_US = 100;

export const BENCH_TRANSFORM = `
export default function (context, request) {
  request.headers["x-client"] = context.clientId;
  request.body.userName = request.body.user_name;
  delete request.body.user_name;
  return request;
}`;

export interface SandboxCost {
  /** Module load + compile + first call, ms. */
  coldMs: number;
  /** Of which the module load (ms) and the compile (ms). */
  moduleMs: number;
  compileMs: number;
  coldIsCold: boolean;
  /** Median over rounds of the mean per call, µs. */
  warmUs: number;
}

const args = () => [
  {
    requestId: "r1",
    clientId: "c1",
    proxyId: "p1",
    region: "eu-west-1",
    receivedAt: 0,
    callerIp: "192.0.2.1",
  },
  {
    method: "POST",
    path: "/users",
    query: { page: "1" },
    headers: { "content-type": "application/json", accept: "application/json", "user-agent": "bench" },
    body: { user_name: "ada", age: 36, tags: ["a", "b"] },
  },
];

export async function sandboxCost(calls = 5000): Promise<SandboxCost> {
  const coldIsCold = sandboxModuleLoads() === 0;
  const t0 = performance.now();
  await compileTransform("warmup", "export default () => 1");
  const t1 = performance.now();
  const compiled = await compileTransform("bench", BENCH_TRANSFORM);
  const t2 = performance.now();
  const first = await runTransform(compiled, args());
  const t3 = performance.now();
  if (!first.ok) throw new Error(`the bench transform failed: ${first.message}`);
  const rounds: number[] = [];
  for (let round = 0; round < 5; round++) {
    const input = args();
    const start = performance.now();
    for (let i = 0; i < calls / 5; i++) {
      const result = await runTransform(compiled, input);
      if (!result.ok) throw new Error(`the bench transform failed: ${result.message}`);
    }
    rounds.push(((performance.now() - start) * 1000) / (calls / 5));
  }
  disposeTransform(compiled);
  rounds.sort((a, b) => a - b);
  return {
    coldMs: t3 - t0,
    moduleMs: t1 - t0,
    compileMs: t2 - t1,
    coldIsCold,
    warmUs: rounds[Math.floor(rounds.length / 2)]!,
  };
}

export function printSandboxCost(cost: SandboxCost): void {
  console.log(
    `sandbox cold first call: ${cost.coldMs.toFixed(1)} ms (module load with a first context ${cost.moduleMs.toFixed(1)} ms, ` +
      `compile ${cost.compileMs.toFixed(1)} ms)${cost.coldIsCold ? "" : " [module already loaded]"}`,
  );
  console.log(`sandbox warm cost per call: ${cost.warmUs.toFixed(1)} µs (goal ≤ ${WARM_GOAL_US} µs)`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  printSandboxCost(await sandboxCost());
}
