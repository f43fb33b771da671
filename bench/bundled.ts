/**
 * The bundled data plane, measured as Lambda runs it (issue 25, "Honest measurement"): the asset
 * `cdk synth` builds (cdk/bundle.ts buildSplitBundle) runs in a child `node` process with Lambda's
 * environment, behind a thin front (bench/lambda-child.ts) that turns each HTTP request into the
 * function URL event (payload 2.0) and hands the RESPONSE_STREAM handler the response to stream
 * into; the child's SDK reaches the emulator through the keep-alive front
 * (bench/keep-alive-front.ts), which also counts the store calls. Printed side by side:
 * - CPU per request of the child process alone (process.cpuUsage inside the child, over IPC):
 *   the minimal Node proxy (a child too), the front around a trivial handler (its own cost), the
 *   gateway without meters and with three meters, and the gateway's ratio to the minimal proxy;
 * - store calls per request by operation, before the answer (the caller waits) and after it;
 * - the caller's p50 and p99 (one connection);
 * - the accuracy run: 200 concurrent requests at a limit of 50, across several instances;
 * - where the CPU goes: a CPU profile of the warm gateway child under load (the inspector's
 *   profiler around the load run only), by package.
 * A benchmark, not a test: it asserts nothing.
 */
import { type ChildProcess, fork } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import autocannon from "autocannon";
import { buildSync } from "esbuild";
import { EMULATOR_TIMEOUT_ENV } from "#lib/aws/clients.ts";
import { ESBUILD_TARGET } from "../cdk/bundle.ts";
import {
  attributeCalls,
  type CallsAroundAnswer,
  type Invocation,
  perInvocation,
  totalOf,
} from "./function-url-front.ts";
import type { KeepAliveFront } from "./keep-alive-front.ts";
import { addBenchMeters, proxyWithKey } from "./meters.ts";
import { type CpuProfile, type ProfileSummary, SDK_ANY, summariseProfile } from "./profile-summary.ts";

type Call = (
  method: string,
  path: string,
  body?: unknown,
) => Promise<Record<string, Record<string, string>[]>>;

export interface BundledInput {
  call: Call;
  /** `/api/clients/{clientId}` */
  api: string;
  region: string;
  targetUrl: string;
  targetId: string;
  targetCredentialId: string;
  /** The keep-alive front to the emulator: the children's AWS_ENDPOINT_URL, and the call counter. */
  front: KeepAliveFront;
  /** The built asset (bench/bundle-report.ts buildDataPlaneBundle). */
  outdir: string;
  requests: number;
  connections: number;
  /** Sequential requests for the store-call count. */
  sample: number;
  /** Instances (children) of the accuracy run. */
  accuracyInstances?: number;
  /** Also profile the gateway child under load. */
  profile?: boolean;
}

/** The child program, built next to the asset (plain `node`, no tsx). */
export function buildChild(outdir: string): string {
  const outfile = join(outdir, "bench-child.mjs");
  buildSync({
    entryPoints: [fileURLToPath(new URL("./lambda-child.ts", import.meta.url))],
    outfile,
    bundle: true,
    format: "esm",
    platform: "node",
    target: ESBUILD_TARGET,
    logLevel: "warning",
  });
  return outfile;
}

/** The environment Lambda gives the data plane (cdk/constructs/gateway-function.ts commonEnvironment, and the runtime's own). */
function lambdaEnvironment(input: BundledInput): NodeJS.ProcessEnv {
  const env = process.env;
  return {
    PATH: env.PATH,
    TZ: "UTC",
    AWS_REGION: input.region,
    AWS_DEFAULT_REGION: input.region,
    AWS_ACCESS_KEY_ID: env.AWS_ACCESS_KEY_ID,
    AWS_SECRET_ACCESS_KEY: env.AWS_SECRET_ACCESS_KEY,
    AWS_ENDPOINT_URL: input.front.endpoint,
    AWS_LAMBDA_FUNCTION_NAME: "bench-data-plane",
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: "1024",
    AWS_EXECUTION_ENV: "AWS_Lambda_nodejs24.x",
    LAMBDA_TASK_ROOT: input.outdir,
    TABLE_NAME: env.TABLE_NAME,
    HOME_REGION: env.HOME_REGION,
    REGIONS: env.REGIONS,
    KMS_KEY_ALIAS: env.KMS_KEY_ALIAS,
    NODE_OPTIONS: "--enable-source-maps",
    // Not deployed (lib/aws/clients.ts `cachedMiddleware`); BENCH_SDK_CACHE_MIDDLEWARE=true measures it.
    ...(process.env.BENCH_SDK_CACHE_MIDDLEWARE
      ? { SDK_CACHE_MIDDLEWARE: process.env.BENCH_SDK_CACHE_MIDDLEWARE }
      : {}),
    // The regional stack's defaults (cdk/stacks/regional-stack.ts).
    DATA_PLANE_FRESHNESS: "strict",
    DATA_PLANE_FRESHNESS_MS: "1000",
    // The bench's target listens on loopback (a deployment leaves this off; the local runner sets it).
    OUTBOUND_ALLOW_LOOPBACK: "true",
    // Lambda runs Node 24; this machine's Node 20 makes the SDK warn once at start.
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
    // The emulator serves one call at a time: a queue there is not a stall (lib/aws/clients.ts).
    ...EMULATOR_TIMEOUT_ENV,
  };
}

export interface Child {
  url: string;
  /** µs of CPU (user + system) the child has used so far. */
  cpuUs(): Promise<number>;
  invocations(): Promise<Invocation[]>;
  /** Start the inspector's CPU profiler in the child; `stop` writes the profile to `file`. */
  profile(): Promise<{ stop(file: string): Promise<void> }>;
  exit(): Promise<void>;
}

function ask<T>(child: ChildProcess, message: string, field: string): Promise<T> {
  return new Promise((resolve) => {
    const listen = (reply: Record<string, unknown>) => {
      if (!(field in reply)) return;
      child.off("message", listen);
      resolve(reply[field] as T);
    };
    child.on("message", listen);
    child.send(message);
  });
}

export async function startChild(
  childFile: string,
  input: BundledInput,
  mode: "handler" | "trivial" | "minimal",
  extraEnv: Record<string, string> = {},
): Promise<Child> {
  const arg =
    mode === "handler"
      ? pathToFileURL(join(input.outdir, "index.mjs")).href
      : mode === "minimal"
        ? input.targetUrl
        : "";
  const child = fork(childFile, [mode, arg], {
    env: { ...lambdaEnvironment(input), ...extraEnv },
    // Not the parent's (tsx's loader): plain node, as Lambda runs the asset.
    execArgv: [],
    stdio: ["ignore", "ignore", "inherit", "ipc"],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`bench child (${mode}) exited with code ${code}`)));
    const listen = (message: { port?: number }) => {
      if (message.port === undefined) return;
      child.off("message", listen);
      resolve(message.port);
    };
    child.on("message", listen);
  });
  child.removeAllListeners("exit");
  return {
    url: `http://127.0.0.1:${port}`,
    cpuUs: async () => {
      const cpu = await ask<NodeJS.CpuUsage>(child, "cpu", "cpu");
      return cpu.user + cpu.system;
    },
    invocations: () => ask<Invocation[]>(child, "invocations", "invocations"),
    profile: async () => {
      await ask(child, "profile-start", "profiling");
      return { stop: async (file: string) => void (await ask(child, `profile-stop:${file}`, "profiled")) };
    },
    exit: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.send("exit");
      }),
  };
}

/** CPU of the child per request over `amount` requests at `connections` connections, after a warm-up. */
async function cpuPerRequest(
  child: Child,
  url: string,
  headers: Record<string, string>,
  input: BundledInput,
) {
  await autocannon({ url, headers, connections: 2, amount: 50 });
  const before = await child.cpuUs();
  const result = await autocannon({ url, headers, connections: input.connections, amount: input.requests });
  const used = (await child.cpuUs()) - before;
  return { us: used / Math.max(result.requests.total, 1), non2xx: result.non2xx };
}

async function latency(url: string, headers: Record<string, string>) {
  await autocannon({ url, connections: 2, amount: 20, headers });
  const single = await autocannon({ url, connections: 1, amount: 200, headers });
  return { p50: single.latency.p50, p99: single.latency.p99, non2xx: single.non2xx };
}

/** The promise, or an error naming `what` after `ms` (a child that stopped answering). */
function withDeadline<T>(promise: Promise<T>, what: string, ms = 60_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Store calls per request, one request at a time, split at the answer by the child's marks. */
async function storeCalls(
  child: Child,
  input: BundledInput,
  url: string,
  headers: Record<string, string>,
): Promise<CallsAroundAnswer> {
  for (let i = 0; i < 5; i++) await fetch(url, { headers }).then((r) => r.arrayBuffer());
  await sleep(100);
  await child.invocations();
  await input.front.calls();
  for (let i = 0; i < input.sample; i++) await fetch(url, { headers }).then((r) => r.arrayBuffer());
  const invocations: Invocation[] = [];
  // The last invocation ends after its answer (the log and settlement): wait for its mark.
  for (let tries = 0; invocations.length < input.sample && tries < 100; tries++) {
    invocations.push(...(await child.invocations()));
    if (invocations.length < input.sample) await sleep(20);
  }
  return attributeCalls(await input.front.calls(), invocations);
}

interface PathFigures {
  name: string;
  cpuUs: number;
  p50: number;
  p99: number;
  non2xx: number;
  calls?: CallsAroundAnswer;
}

export interface BundledFigures {
  rows: PathFigures[];
  accuracy: {
    instances: number;
    passed: number;
    refused: number;
    other: number;
    otherStatuses: string;
    calls: string;
  };
  profile?: { summary: ProfileSummary; cpuUs: number; callsPerRequest: number };
}

/** A proxy with three meters (bench/meters.ts: two limited request_count, one response_value). */
async function meteredProxy(input: BundledInput, name: string) {
  const proxy = await proxyWithKey(input, name);
  await addBenchMeters(input, proxy.proxyId);
  return proxy;
}

export async function benchBundled(input: BundledInput): Promise<BundledFigures> {
  const childFile = buildChild(input.outdir);
  const rows: PathFigures[] = [];
  const path = "/items?page=1";

  // The floor and the front's own cost.
  for (const [name, mode] of [
    ["minimal Node proxy (child)", "minimal"],
    ["front + trivial handler (child)", "trivial"],
  ] as const) {
    const child = await startChild(childFile, input, mode);
    const cpu = await cpuPerRequest(child, `${child.url}${path}`, {}, input);
    const single = await latency(`${child.url}${path}`, {});
    rows.push({ name, cpuUs: cpu.us, ...single, non2xx: cpu.non2xx + single.non2xx });
    await child.exit();
  }

  // The gateway: each run on a proxy and caller credential of its own (the team plan's 1,000
  // requests a minute per credential).
  const relaxed = { DATA_PLANE_FRESHNESS: "relaxed" };
  for (const [name, make, env] of [
    ["gateway: apiKey, no meters", (n: string) => proxyWithKey(input, `bench-plain-${n}`), {}],
    ["gateway: apiKey, 3 meters", (n: string) => meteredProxy(input, `bench-metered-${n}`), {}],
    ["gateway: no meters, relaxed", (n: string) => proxyWithKey(input, `bench-relaxed-${n}`), relaxed],
    ["gateway: 3 meters, relaxed", (n: string) => meteredProxy(input, `bench-relaxed-m-${n}`), relaxed],
  ] as const) {
    const forCpu = await make("cpu");
    const forCalls = await make("calls");
    const child = await startChild(childFile, input, "handler", env);
    const at = (proxyId: string) => `${child.url}/api/${proxyId}${path}`;
    const cpu = await cpuPerRequest(child, at(forCpu.proxyId), forCpu.headers, input);
    await child.exit();
    // The calls and the latency on a fresh instance of their own (its first request leases its
    // first blocks, as a new Lambda instance does). A child that stops answering is reported, not
    // waited for (a lease bug once made one request take a million store calls).
    const second = await startChild(childFile, input, "handler", env);
    const url = `${second.url}/api/${forCalls.proxyId}${path}`;
    try {
      const calls = await withDeadline(
        storeCalls(second, input, url, forCalls.headers),
        `${name}: store calls`,
      );
      const single = await withDeadline(latency(url, forCalls.headers), `${name}: latency`);
      rows.push({ name, cpuUs: cpu.us, ...single, non2xx: cpu.non2xx + single.non2xx, calls });
    } catch (error) {
      console.error(String(error));
      rows.push({ name, cpuUs: cpu.us, p50: Number.NaN, p99: Number.NaN, non2xx: cpu.non2xx });
    }
    await second.exit();
  }

  const accuracy = await accuracyRun(childFile, input);
  let profile: BundledFigures["profile"];
  if (input.profile) profile = await profileGateway(childFile, input);
  return { rows, accuracy, profile };
}

/** Accuracy: 200 concurrent requests at a daily meter limit of 50, dealt to several instances. */
export async function accuracyRun(
  childFile: string,
  input: BundledInput,
): Promise<BundledFigures["accuracy"]> {
  const path = "/items?page=1";
  const instances = input.accuracyInstances ?? 4;
  const exact = await proxyWithKey(input, "bench-accuracy");
  await input.call("POST", `${input.api}/proxies/${exact.proxyId}/meters`, {
    meterType: "request_count",
    meterActive: true,
    meterMode: "conditional",
    effect: "include",
    methods: ["GET"],
    limits: { day: 50 },
  });
  const children = await Promise.all(
    Array.from({ length: instances }, () => startChild(childFile, input, "handler")),
  );
  // Warm each instance's configuration with a request the meter does not count (OPTIONS).
  for (const child of children)
    await fetch(`${child.url}/api/${exact.proxyId}${path}`, {
      method: "OPTIONS",
      headers: exact.headers,
    }).then((r) => r.arrayBuffer());
  await input.front.calls();
  let otherBody: string | undefined;
  const statuses = await Promise.all(
    Array.from({ length: 200 }, (_, i) =>
      fetch(`${children[i % instances]!.url}/api/${exact.proxyId}${path}`, { headers: exact.headers }).then(
        async (r) => {
          const text = await r.text();
          if (r.status !== 200 && r.status !== 429) otherBody ??= text.slice(0, 300);
          return r.status;
        },
      ),
    ),
  );
  await Promise.all(children.map((child) => child.exit()));
  const accuracyCalls = new Map<string, number>();
  for (const [operation] of await input.front.calls())
    accuracyCalls.set(operation, (accuracyCalls.get(operation) ?? 0) + 1);
  return {
    instances,
    passed: statuses.filter((s) => s === 200).length,
    refused: statuses.filter((s) => s === 429).length,
    other: statuses.filter((s) => s !== 200 && s !== 429).length,
    otherStatuses: `${[...new Set(statuses.filter((s) => s !== 200 && s !== 429))].join(", ")}${otherBody ? `: ${otherBody}` : ""}`,
    calls: perInvocation(accuracyCalls, 1),
  };
}

/**
 * A CPU profile of the gateway child (apiKey, no meters) under load, warm: the inspector's
 * profiler runs only around the load run, after the warm-up (no import, no first requests).
 */
export async function profileGateway(childFile: string, input: BundledInput) {
  // BENCH_PROFILE_DIR keeps the .cpuprofile there (open it in Chrome DevTools or speedscope).
  const kept = process.env.BENCH_PROFILE_DIR;
  const dir = kept ?? mkdtempSync(join(tmpdir(), "data-plane-profile-"));
  try {
    const proxy = await proxyWithKey(input, "bench-profile");
    const child = await startChild(childFile, input, "handler");
    const url = `${child.url}/api/${proxy.proxyId}/items?page=1`;
    await autocannon({ url, headers: proxy.headers, connections: 2, amount: 50 });
    await input.front.calls();
    const profiler = await child.profile();
    const before = await child.cpuUs();
    const result = await autocannon({
      url,
      headers: proxy.headers,
      connections: input.connections,
      amount: input.requests,
    });
    const cpuUs = ((await child.cpuUs()) - before) / Math.max(result.requests.total, 1);
    const file = join(dir, `data-plane-${Date.now()}.cpuprofile`);
    await profiler.stop(file);
    const callsPerRequest = (await input.front.calls()).length / Math.max(result.requests.total, 1);
    if (result.non2xx > 0) console.warn(`profile run: ${result.non2xx} answers were not 2xx`);
    await child.exit();
    const data = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
    return { summary: summariseProfile(data, pathToFileURL(childFile).href), cpuUs, callsPerRequest };
  } finally {
    if (!kept) rmSync(dir, { recursive: true, force: true });
  }
}

const f0 = (n: number) => n.toFixed(0);

export function printBundled(
  figures: BundledFigures,
  input: Pick<BundledInput, "requests" | "connections" | "sample">,
) {
  const minimal = figures.rows[0]!;
  const front = figures.rows[1]!;
  console.log(
    `\nThe bundled data plane (cdk/bundle.ts asset in a child node, Lambda's environment, function URL events through a thin front, store through the keep-alive front):`,
  );
  console.log(
    `CPU of the child process per request (${input.requests} requests at ${input.connections} connections; the gateway serves one at a time, as a Lambda instance); caller p50/p99 on 1 connection (200 requests):`,
  );
  console.log(
    `  ${"path".padEnd(34)}${"child CPU µs".padStart(13)}${"own µs".padStart(9)}${"x minimal".padStart(11)}${"p50 ms".padStart(9)}${"p99 ms".padStart(9)}${"non-2xx".padStart(9)}`,
  );
  for (const [i, row] of figures.rows.entries()) {
    // The gateway's own CPU: the child's minus the front's (front + trivial handler).
    const own = i >= 2 ? row.cpuUs - front.cpuUs : row.cpuUs;
    const ratio = i === 1 ? "" : `${(own / minimal.cpuUs).toFixed(1)}`;
    console.log(
      `  ${row.name.padEnd(34)}${f0(row.cpuUs).padStart(13)}${(i === 1 ? "-" : f0(own)).padStart(9)}${ratio.padStart(11)}${String(row.p50).padStart(9)}${String(row.p99).padStart(9)}${String(row.non2xx).padStart(9)}`,
    );
  }
  console.log(
    `  (own = child CPU minus the front's ${f0(front.cpuUs)} µs for the gateway; goal: own <= 5 x minimal. Whole child, front included: ${figures.rows
      .slice(2)
      .map((row) => `${row.name.replace("gateway: ", "")} ${(row.cpuUs / minimal.cpuUs).toFixed(1)} x`)
      .join(", ")})`,
  );
  console.log(
    `Store calls per request at the keep-alive front (X-Amz-Target; ${input.sample} sequential requests, split at the moment the answer was sent):`,
  );
  for (const row of figures.rows.slice(2)) {
    const calls = row.calls;
    if (!calls) {
      console.log(`  ${row.name.padEnd(30)} not measured: the instance stopped answering (see above)`);
      continue;
    }
    const n = calls.invocations;
    console.log(
      `  ${row.name.padEnd(30)} before the answer ${(totalOf(calls.before) / n).toFixed(2)} [${perInvocation(calls.before, n)}]; after ${(totalOf(calls.after) / n).toFixed(2)} [${perInvocation(calls.after, n)}]${calls.outside.size ? `; between requests ${perInvocation(calls.outside, n)}` : ""}`,
    );
  }
  const a = figures.accuracy;
  console.log(
    `Accuracy: 200 concurrent requests at a daily meter limit of 50 across ${a.instances} instances: ${a.passed} passed, ${a.refused} refused${a.other ? `, ${a.other} other (${a.otherStatuses})` : ""} (goal: exactly 50 passed); store calls in the run: ${a.calls}`,
  );
  if (figures.profile) printProfile(figures.profile);
}

export function printProfile(profile: NonNullable<BundledFigures["profile"]>) {
  const { summary, cpuUs, callsPerRequest } = profile;
  const share = (us: number) => `${((100 * us) / summary.busyUs).toFixed(1)} %`.padStart(8);
  console.log(
    `Where the CPU goes (CPU profile of the warm gateway child, apiKey, no meters, under load; ${f0(cpuUs)} µs per request, ${callsPerRequest.toFixed(2)} store calls per request; self time, share of busy time):`,
  );
  for (const [part, us] of summary.parts) console.log(`  ${share(us)}  ${part}`);
  console.log("  by package or folder:");
  for (const [group, us] of summary.groups.slice(0, 14)) console.log(`  ${share(us)}  ${group}`);
  const sdk = summary.parts
    .filter(([part]) => part.startsWith("AWS SDK"))
    .reduce((total, [, us]) => total + us, 0);
  const sdkPerRequest = (cpuUs * sdk) / summary.busyUs;
  // Inclusive: samples with an SDK frame on the stack (its node:http, crypto, socket writes).
  const sdkInclusive = summary.inclusiveParts.find(([part]) => part === SDK_ANY)?.[1] ?? 0;
  const sdkInclusivePerRequest = (cpuUs * sdkInclusive) / summary.busyUs;
  const perCall = (us: number) => (callsPerRequest > 0 ? f0(us / callsPerRequest) : "-");
  console.log(
    `  the SDK: self time ${f0(sdkPerRequest)} µs per request (${perCall(sdkPerRequest)} µs per store call); with what it calls on its stack (node:http, crypto, socket writes) ${f0(sdkInclusivePerRequest)} µs per request (${perCall(sdkInclusivePerRequest)} µs per call; async continuations such as reading the answer not included)`,
  );
  console.log(
    "  inclusive (a frame of the part anywhere on the stack; node internals and V8 are at the base of every stack, left out):",
  );
  for (const [part, us] of summary.inclusiveParts.filter(
    ([part]) => !part.startsWith("node internals") && !part.startsWith("V8"),
  ))
    console.log(`  ${share(us)}  ${part}`);
  console.log("  the SDK's self time by area (what caching a command's fixed parts could save):");
  for (const [area, us] of summary.sdkAreas.slice(0, 12))
    console.log(
      `  ${share(us)}  ${area}  (${f0((cpuUs * us) / summary.busyUs / Math.max(callsPerRequest, 1))} µs per call)`,
    );
  console.log("  heaviest functions:");
  for (const [name, us] of summary.functions.slice(0, 10)) console.log(`  ${share(us)}  ${name}`);
}
