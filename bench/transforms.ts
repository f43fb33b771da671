/**
 * The transforms case of `npm run bench` (issue 10, "Benchmark"): one request transform (add a
 * header, rename a JSON field of the request body) and one response transform (add a header,
 * rename a JSON field of the answer), created through the Core API on a proxy, beside the same
 * proxy without transforms, printed in the same run:
 * - the sandbox's warm cost per call (µs, through the worker thread: bench/sandbox-cost.ts);
 * - the cold cost of the first call on a fresh instance (ms): a new `node` process imports the
 *   bundled asset's `sandbox.mjs` (the Lambda asset, cdk/bundle.ts), compiles the transform and
 *   calls it once; then, with the default limits, a builtin bomb is killed at the hard deadline
 *   and the time to the next worker and the next (recompiled) call is measured;
 * - the process CPU per proxied request (µs) with and without the transforms, through the real
 *   data plane of the local stack (POST with a JSON body).
 * Whether the data plane runs transforms is detected at run time (the target echoes the request
 * transform's header; the answer carries the response transform's header and renamed field):
 * when it does not, the gateway figures are printed as "n/a (transforms not wired)".
 * A benchmark, not a test: it asserts nothing.
 */
import { execFileSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { median } from "./bundle-report.ts";
import { cpuPerRequestUs } from "./cpu.ts";
import { proxyWithKey as keyedProxy } from "./meters.ts";
import { BENCH_TRANSFORM, printSandboxCost, type SandboxCost } from "./sandbox-cost.ts";
import { ECHOED_HEADER } from "./setup.ts";

export const REQUEST_TRANSFORM = `
export default function (context, request) {
  request.headers["${ECHOED_HEADER}"] = "request";
  if (request.body && typeof request.body === "object") {
    request.body.userName = request.body.user_name;
    delete request.body.user_name;
  }
  return request;
}`;

export const RESPONSE_TRANSFORM = `
export default function (context, request, response) {
  response.headers["x-bench-response"] = "1";
  if (response.body && typeof response.body === "object") {
    response.body.remark = response.body.note;
    delete response.body.note;
  }
  return response;
}`;

const REQUEST_BODY = JSON.stringify({ user_name: "ada", age: 36, tags: ["a", "b"] });

type Call = (
  method: string,
  path: string,
  body?: unknown,
) => Promise<Record<string, Record<string, string>[]>>;

export interface TransformsBenchInput {
  call: Call;
  /** `/api/clients/{clientId}` */
  api: string;
  region: string;
  dataPlane: string;
  targetId: string;
  targetCredentialId: string;
  requests: number;
  connections: number;
}

export interface TransformsBench {
  requestTransformRan: boolean;
  responseTransformRan: boolean;
  /** CPU µs per proxied request, when both transforms ran; else undefined. */
  plainUs?: number;
  transformedUs?: number;
}

async function proxyWithKey(input: TransformsBenchInput, name: string) {
  const { proxyId, headers } = await keyedProxy(input, name);
  return {
    url: `${input.dataPlane}/api/${proxyId}/users?page=1`,
    proxyId,
    headers: { ...headers, "content-type": "application/json" },
  };
}

/** The gateway case: two proxies, transforms through the API, wiring detected, CPU measured. */
export async function benchTransforms(input: TransformsBenchInput): Promise<TransformsBench> {
  const plain = await proxyWithKey(input, "bench-no-transforms");
  const transformed = await proxyWithKey(input, "bench-transforms");
  const base = `${input.api}/proxies/${transformed.proxyId}`;
  await input.call("POST", `${base}/request-transforms`, {
    transformMode: "all",
    transformActive: true,
    code: REQUEST_TRANSFORM,
  });
  await input.call("POST", `${base}/response-transforms`, {
    transformMode: "all",
    transformActive: true,
    code: RESPONSE_TRANSFORM,
  });
  const probe = await fetch(transformed.url, {
    method: "POST",
    headers: transformed.headers,
    body: REQUEST_BODY,
  });
  const text = await probe.text();
  let answer: Record<string, unknown> = {};
  try {
    answer = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // Not JSON: neither transform is visible.
  }
  const requestTransformRan = probe.headers.get("x-bench-saw") === "request";
  const responseTransformRan =
    probe.headers.get("x-bench-response") === "1" && "remark" in answer && !("note" in answer);
  if (!requestTransformRan || !responseTransformRan) return { requestTransformRan, responseTransformRan };
  const post = { method: "POST" as const, body: REQUEST_BODY };
  return {
    requestTransformRan,
    responseTransformRan,
    plainUs: await cpuPerRequestUs(plain.url, plain.headers, input.requests, input.connections, post),
    transformedUs: await cpuPerRequestUs(
      transformed.url,
      transformed.headers,
      input.requests,
      input.connections,
      post,
    ),
  };
}

export interface ColdRuns {
  /** Sorted, ms. */
  importMs: number[];
  compileMs: number[];
  callMs: number[];
  totalMs: number[];
  /** Runs whose compile or first call exceeded the 50 ms default deadline (measured at 10 s). */
  overDeadline: number;
  /**
   * With the default limits, after the first call: a builtin bomb's call until its `timeout`
   * answer (the kill), the new worker's start, then the transform's next call (compiled again).
   */
  killMs: number[];
  restartMs: number[];
  recompileCallMs: number[];
}

/**
 * The first call on a fresh instance, in `runs` new `node` processes (working directory the
 * system temp directory): import the asset's `sandbox.mjs`, compile the bench transform, call it
 * once. The children run with a 10 s deadline so that a slow first call is measured rather than
 * refused; how many runs would have met the default 50 ms deadline is counted.
 */
export function coldFirstCallMs(sandboxFile: string, runs = 9): ColdRuns {
  const script = `
const t0 = performance.now();
const sandbox = await import(${JSON.stringify(pathToFileURL(sandboxFile).href)});
const t1 = performance.now();
const compiled = await sandbox.compileTransform("bench", ${JSON.stringify(BENCH_TRANSFORM)});
const t2 = performance.now();
const result = await sandbox.runTransform(compiled, [{ clientId: "c1" }, { headers: {}, body: { user_name: "ada" } }]);
const t3 = performance.now();
if (!result.ok) throw new Error(result.message);
const limits = sandbox.sandboxLimits({});
const bomb = await sandbox.compileTransform("bomb", "export default () => /(a+)+$/.test('a'.repeat(27) + 'b')", limits);
const again = await sandbox.compileTransform("bench", ${JSON.stringify(BENCH_TRANSFORM)}, limits);
const t4 = performance.now();
const killed = await sandbox.runTransform(bomb, []);
const t5 = performance.now();
await sandbox.warmSandbox();
const t6 = performance.now();
const next = await sandbox.runTransform(again, [{ clientId: "c1" }, { headers: {}, body: { user_name: "ada" } }]);
const t7 = performance.now();
if (killed.ok || killed.reason !== "timeout" || !next.ok) throw new Error("the kill case failed");
process.stdout.write(JSON.stringify([t1 - t0, t2 - t1, t3 - t2, t3 - t0, t5 - t4, t6 - t5, t7 - t6]));`;
  const figures: number[][] = [[], [], [], [], [], [], []];
  let overDeadline = 0;
  for (let i = 0; i < runs; i++) {
    const run = JSON.parse(
      execFileSync(process.execPath, ["--input-type=module", "-e", script], {
        cwd: tmpdir(),
        encoding: "utf8",
        env: { PATH: process.env.PATH, LOG_LEVEL: "silent", TRANSFORM_DEADLINE_MS: "10000" },
      }),
    ) as number[];
    for (const [k, value] of run.entries()) figures[k]!.push(value);
    // The compile's deadline covers module evaluation only (not the module load), as the call's.
    if (run[2]! > 50) overDeadline++;
  }
  const [importMs, compileMs, callMs, totalMs, killMs, restartMs, recompileCallMs] = figures.map((list) =>
    list.sort((a, b) => a - b),
  );
  return {
    importMs: importMs!,
    compileMs: compileMs!,
    callMs: callMs!,
    totalMs: totalMs!,
    overDeadline,
    killMs: killMs!,
    restartMs: restartMs!,
    recompileCallMs: recompileCallMs!,
  };
}

/** The asset's sandbox entry (cdk/bundle.ts SANDBOX_ENTRY, built as `sandbox.mjs`). */
export const sandboxFileOf = (outdir: string) => join(outdir, "sandbox.mjs");

export function printTransformFigures(
  sandbox: SandboxCost,
  cold: ColdRuns,
  gateway: TransformsBench,
  requests: number,
  connections: number,
): void {
  console.log(
    "\nTransforms (1 request transform: add a header, rename a JSON field; 1 response transform: the same on the answer):",
  );
  printSandboxCost(sandbox);
  console.log(
    `sandbox cold first call on a fresh instance (bundled sandbox.mjs in a new node process): median ${median(cold.totalMs).toFixed(0)} ms ` +
      `(import ${median(cold.importMs).toFixed(0)}, worker start + module load + compile ${median(cold.compileMs).toFixed(0)}, first call ${median(cold.callMs).toFixed(1)} ms; ` +
      `${cold.totalMs.length} runs, total min ${cold.totalMs[0]!.toFixed(0)}, max ${cold.totalMs.at(-1)!.toFixed(0)}; first call over the 50 ms deadline in ${cold.overDeadline} runs)`,
  );
  console.log(
    `sandbox worker killed at the hard deadline (a builtin bomb, default limits): answered in median ${median(cold.killMs).toFixed(0)} ms ` +
      `(max ${cold.killMs.at(-1)!.toFixed(0)}); new worker ready ${median(cold.restartMs).toFixed(0)} ms later (max ${cold.restartMs.at(-1)!.toFixed(0)}); ` +
      `the next call, compiled again there: ${median(cold.recompileCallMs).toFixed(1)} ms`,
  );
  const label = `process CPU per proxied request (POST with a JSON body, ${requests} requests at ${connections} connections)`;
  if (gateway.plainUs === undefined || gateway.transformedUs === undefined) {
    console.log(
      `${label}: n/a (transforms not wired: request transform ran ${gateway.requestTransformRan ? "yes" : "no"}, response transform ran ${gateway.responseTransformRan ? "yes" : "no"})`,
    );
    return;
  }
  console.log(
    `${label}: without transforms ${gateway.plainUs.toFixed(0)} µs, with both ${gateway.transformedUs.toFixed(0)} µs (+${(gateway.transformedUs - gateway.plainUs).toFixed(0)} µs)`,
  );
}
