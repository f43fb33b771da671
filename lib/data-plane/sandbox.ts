/**
 * The transform sandbox (issue 10, "Running code"): user JavaScript in QuickJS compiled to
 * WebAssembly (quickjs-emscripten, sync release build 0.31.0; 0.32.0 aborts when a context is
 * disposed after running out of memory, its issue 257), in a worker thread that can be killed.
 *
 * - QuickJS runs in one `node:worker_threads` Worker per warm instance (sandbox-worker.ts), with
 *   one WebAssembly module in it, started on the first compile. This file is its main-thread
 *   side and keeps the API: compileTransform / runTransform / disposeTransform.
 * - Handoff: a MessageChannel carries the request and the answer; a SharedArrayBuffer of Int32
 *   words (sandbox-control.ts) signals them. The main thread posts, bumps the request word and
 *   `Atomics.wait`s on the answer word with a timeout (polling it first, SPIN_MS); the worker
 *   `Atomics.wait`s for work and reads the request with `receiveMessageOnPort`. Calls are
 *   therefore synchronous and serialised, as QuickJS in process was. The warm path is lean: a
 *   call is posted as its arguments' JSON string alone (its key and deadline in control words),
 *   and a call that succeeded without module output is answered with the result's JSON string
 *   alone; other requests and answers are objects with their seq.
 * - Two bounds per call, both enforced twice: inside QuickJS by the interrupt handler (a
 *   `timeout` failure, the context is thrown away, the worker lives) and outside by the main
 *   thread's wait (`deadline + killGraceMs`): when the worker has not answered by then (a builtin
 *   such as `new Array(1e6).fill(7)` never polls the interrupt handler), the call is answered
 *   `timeout` at once, the worker is `terminate()`d (V8 stops it even inside wasm) and a new one
 *   is started. Every transform's context is compiled again on the new worker before its next
 *   call (this side keeps each transform's JavaScript).
 *   - The call: `deadlineMs` (`TRANSFORM_DEADLINE_MS`, default 50), the user's function and its
 *     promise jobs only.
 *   - The module's top-level evaluation: `loadDeadlineMs` (`TRANSFORM_LOAD_DEADLINE_MS`, default
 *     500), so that a compile on a cold or loaded instance is not a false timeout. A top-level
 *     timeout is remembered for that compiled transform (every call answers it at once) until the
 *     configuration is loaded again: a top-level infinite loop costs the load bound once, not on
 *     every request.
 * - Each transform gets its own QuickJS runtime and context: its own heap with a memory limit
 *   (`TRANSFORM_MEMORY_LIMIT_MB`, default 16) and a stack limit (256 KiB).
 * - No host API: nothing of the host is put in the context (no timers, console, fetch, process,
 *   filesystem), and `Date` cannot read the clock (`Date.now()`, `new Date()` and `Date()` throw;
 *   `new Date(ms)` and `Date.parse` work).
 * - Arguments go in as one JSON string (at most `ARGS_LIMIT_CHARS`) and the result comes out as one
 *   JSON string, capped at `RESULT_LIMIT_CHARS` and `RESULT_DEPTH_LIMIT`: no handle to a host object
 *   ever exists inside.
 * - Reuse: the context is compiled once per `compileTransform` (once per configuration load) and
 *   reused by every call of that transform, as Workers reuse isolates. Module-level state of a
 *   transform therefore survives from one request to the next of the same transform on the same
 *   instance (never across transforms: each has its own runtime). After any failure, and after a
 *   worker restart, the context is made again and the code evaluated again.
 * - When a call fails in the host rather than in QuickJS (a wasm trap, the host stack exhausted
 *   inside wasm, QuickJS's abort when a runtime that still holds objects is freed, its issues 235
 *   and 269), the worker answers `broken`: it is dropped and a new one started (a "recycle").
 * - A transform whose calls cost the worker (killed at the hard deadline, or a host failure) 3 times
 *   within 60 s is suspended on the instance for a cool-down (60 s, doubling on repeat up to 16 min;
 *   lib/domain/transforms/suspension.ts): its calls answer `suspended` at once without running,
 *   keyed by its id and code hash, so edited code runs at once.
 * - The emscripten module's own output (print, printErr) comes back with the worker's answers and
 *   goes to our logger, never to raw stdout/stderr; recycles and kills are counted
 *   (`sandboxStats()`) and logged with CloudWatch metrics (`SandboxModuleRecycles`,
 *   `SandboxWorkerKills`).
 *
 * Nothing in the data plane imports this file at start: it is loaded with import() when a proxy
 * has a transform, so the cold start of a proxy without transforms never reads QuickJS. In the
 * Lambda asset it is its own entry, `sandbox.mjs`, with the worker entry `sandbox-worker.mjs`
 * beside it and the wasm beside its loader chunk (cdk/bundle.ts).
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { availableParallelism } from "node:os";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from "node:worker_threads";
import {
  recordKill,
  type Suspension,
  type SuspensionPolicy,
  type SuspensionState,
  suspendedMessage,
  suspensionAt,
  suspensionPolicy,
} from "#lib/domain/transforms/suspension.ts";
import { log, metricFields } from "#lib/log.ts";
import { ANSWER_SEQ, CALL_DEADLINE, CALL_KEY, CONTROL_BYTES, REQUEST_SEQ } from "./sandbox-control.ts";

export const DEFAULT_MEMORY_LIMIT_MB = 16;
export const DEFAULT_DEADLINE_MS = 50;
export const DEFAULT_LOAD_DEADLINE_MS = 500;
/**
 * After the deadline, how long the main thread waits for the worker's own answer before it kills
 * the worker. Covers the interrupt handler's polling interval, freeing the failed context and a
 * descheduled thread.
 */
export const KILL_GRACE_MS = 100;
/** How long a new worker may take to load QuickJS and answer ready. */
export const WORKER_START_LIMIT_MS = 10_000;
/**
 * QuickJS's stack limit. Wasm frames run on the host's own stack: at 512 KiB a deep recursion
 * exhausts the thread's stack before QuickJS notices (then the worker is replaced); 256 KiB stops
 * it inside QuickJS at a depth of about 1,300 plain calls.
 */
export const MAX_STACK_BYTES = 256 * 1024;
/** The result's JSON, in characters. */
export const RESULT_LIMIT_CHARS = 6 * 1024 * 1024;
/** The arguments' JSON, in characters (a request and a response, each up to Lambda's 6 MB). */
export const ARGS_LIMIT_CHARS = 2 * RESULT_LIMIT_CHARS + 1024 * 1024;
/** Nesting of arrays and objects in the result. */
export const RESULT_DEPTH_LIMIT = 64;
const MESSAGE_LIMIT = 500;

export interface SandboxLimits {
  memoryBytes: number;
  /** The user's call. */
  deadlineMs: number;
  /** The module's top-level evaluation (compile). */
  loadDeadlineMs: number;
  /** Past a deadline, the wait for the worker's answer before it is killed; only tests change it. */
  killGraceMs: number;
  /** QuickJS's stack limit; only tests change it. */
  maxStackBytes: number;
}

function positiveInteger(env: NodeJS.ProcessEnv, name: string, fallback: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > max) {
    throw new Error(`${name} must be an integer from 1 to ${max}, got "${raw}"`);
  }
  return value;
}

/** The limits of this deployment, from the environment (a bad value fails loudly). */
export function sandboxLimits(env: NodeJS.ProcessEnv = process.env): SandboxLimits {
  return {
    memoryBytes:
      positiveInteger(env, "TRANSFORM_MEMORY_LIMIT_MB", DEFAULT_MEMORY_LIMIT_MB, 512) * 1024 * 1024,
    deadlineMs: positiveInteger(env, "TRANSFORM_DEADLINE_MS", DEFAULT_DEADLINE_MS, 10_000),
    loadDeadlineMs: positiveInteger(env, "TRANSFORM_LOAD_DEADLINE_MS", DEFAULT_LOAD_DEADLINE_MS, 10_000),
    killGraceMs: KILL_GRACE_MS,
    maxStackBytes: MAX_STACK_BYTES,
  };
}

export type FailureReason = "timeout" | "memory" | "error" | "invalid" | "suspended";
/** A suspension of the transform (docs/transforms.md "Suspension"); `started` by this call's kill. */
export type TransformSuspension = Suspension & { started: boolean };
export type TransformResult =
  | { ok: true; value: unknown }
  | {
      ok: false;
      reason: FailureReason;
      message: string;
      /**
       * The call cost the instance its worker: killed at the hard deadline, or dropped after a
       * host failure. Counts towards a suspension.
       */
      workerLost?: true;
      /** The call was not run (suspended), or its kill suspended the transform. */
      suspension?: TransformSuspension;
    };
type Failed = TransformResult & { ok: false };

export interface CompiledTransform {
  readonly id: string;
  readonly javascript: string;
  /** SHA-256 of the JavaScript: with the id, the key of its suspension (an edited code is another). */
  readonly codeHash: string;
  readonly limits: SandboxLimits;
  /** Its key in the worker. */
  readonly key: number;
  /** The worker holding its live context, if any (none after a failure or a worker restart). */
  worker?: SandboxWorker;
  /** A timeout of the module's top level: answered by every call without running it again. */
  loadTimeout?: Failed;
  /**
   * Set by disposeTransform: its configuration was replaced. A request still holding it (one that
   * began before the replacement) may call it again; the context made for that call is disposed
   * right after it, so nothing is left behind.
   */
  retired?: boolean;
}

// ---- The protocol with sandbox-worker.ts -----------------------------------------------------

/** workerData of a new worker. */
export interface WorkerSetup {
  /** Int32 words, sandbox-control.ts. */
  control: SharedArrayBuffer;
  port: MessagePort;
}

export type WorkerRequest =
  | {
      op: "compile";
      key: number;
      id: string;
      javascript: string;
      memoryBytes: number;
      maxStackBytes: number;
      loadDeadlineMs: number;
      /** The result's JSON, in characters (the runner answers a longer one `invalid`). */
      resultLimitChars: number;
    }
  | { op: "call"; key: number; argsJson: string; deadlineMs: number }
  | { op: "dispose"; key: number }
  | { op: "leak"; key: number };

export type WorkerResult = { ok: true; json: string } | Failed;
export interface WorkerOutput {
  stream: "stdout" | "stderr";
  text: string;
}
export interface WorkerReply {
  seq: number;
  result?: WorkerResult;
  /** Whether the transform's context is alive in the worker after this request. */
  alive: boolean;
  /** The emscripten module's print/printErr lines since the last answer. */
  output: WorkerOutput[];
  /** A host-level failure: the worker must be dropped. */
  broken?: string;
}

// ---- The worker: one per warm instance -------------------------------------------------------

/** The CloudWatch metric counting module recycles (EMF on the log line, lib/log.ts). */
export const SANDBOX_RECYCLE_METRIC = "SandboxModuleRecycles";
/** The CloudWatch metric counting workers killed at the hard deadline. */
export const SANDBOX_KILL_METRIC = "SandboxWorkerKills";
const OUTPUT_LIMIT = 1000;

export interface SandboxWorker {
  worker: Worker;
  port: MessagePort;
  control: Int32Array;
  seq: number;
  state: "starting" | "ready" | "dead";
  ready: Promise<void>;
}

let current: SandboxWorker | undefined;
/**
 * Before sleeping in `Atomics.wait`, the main thread polls the answer word this long: a warm call
 * answers in tens of µs, and a futex sleep and wake-up adds 30-50 µs. Only with two CPUs or more
 * (Lambda from 1,769 MB): on one, spinning would only delay the worker it waits for.
 */
export const SPIN_MS = availableParallelism() > 1 ? 0.1 : 0;
let nextKey = 1;
const stats = { loads: 0, recycles: 0, kills: 0, outputLines: 0, lastKillMs: 0 };

/**
 * The worker's entry: `sandbox-worker.mjs` beside this file in the bundle; from the TypeScript
 * sources (tests, tsx), `sandbox-worker.ts` loaded through tsx's loader registered in the worker.
 */
function newWorker(setup: WorkerSetup): Worker {
  // The process's Node options, less --input-type (a child started with `-e` has it; a worker
  // loaded from a file refuses it).
  const execArgv = process.execArgv.filter((arg) => !arg.startsWith("--input-type"));
  const options = { workerData: setup, transferList: [setup.port], execArgv };
  if (!import.meta.url.endsWith(".ts")) {
    return new Worker(new URL("./sandbox-worker.mjs", import.meta.url), options);
  }
  // tsx, a development dependency, is never bundled: its ESM API's file, from its package.json.
  const manifest = createRequire(import.meta.url).resolve(["tsx", "package.json"].join("/"));
  const { exports } = JSON.parse(readFileSync(manifest, "utf8")) as {
    exports: Record<string, { import: { default: string } }>;
  };
  const api = exports["./esm/api"];
  if (!api)
    throw new Error(`tsx has no ./esm/api export (${manifest}): the sandbox cannot load its TypeScript`);
  const loader = pathToFileURL(join(dirname(manifest), api.import.default)).href;
  const entry = new URL("./sandbox-worker.ts", import.meta.url).href;
  const bootstrap = `import(${JSON.stringify(loader)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}); })`;
  return new Worker(bootstrap, { ...options, eval: true });
}

function startWorker(): SandboxWorker {
  const control = new SharedArrayBuffer(CONTROL_BYTES);
  const { port1, port2 } = new MessageChannel();
  const worker = newWorker({ control, port: port2 });
  const handle = {
    worker,
    port: port1,
    control: new Int32Array(control),
    seq: 0,
    state: "starting",
  } as SandboxWorker;
  handle.ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      fail(new Error(`the sandbox worker did not start within ${WORKER_START_LIMIT_MS} ms`));
    }, WORKER_START_LIMIT_MS);
    const fail = (error: Error) => {
      clearTimeout(timer);
      if (handle.state === "starting") stop(handle);
      reject(error);
    };
    const onMessage = (message: unknown) => {
      // Only the worker's own ready message (a loader in development may post others).
      if ((message as { ready?: unknown } | null)?.ready !== true) return;
      worker.off("message", onMessage);
      clearTimeout(timer);
      if (handle.state !== "starting") return;
      handle.state = "ready";
      stats.loads += 1;
      // Ref'd while starting (a top-level await on a compile keeps the process up); then the
      // worker never keeps the process alive.
      worker.unref();
      resolve();
    };
    worker.on("message", onMessage);
    worker.once("error", fail);
    worker.once("exit", (code) => fail(new Error(`the sandbox worker exited with code ${code}`)));
  });
  handle.ready.catch(() => {}); // answered by the caller that awaits it
  current = handle;
  return handle;
}

/** Drops a worker (never awaited: terminate() stops it even inside wasm). */
function stop(handle: SandboxWorker): void {
  handle.state = "dead";
  if (current === handle) current = undefined;
  handle.port.close();
  handle.worker.terminate().catch(() => {});
}

/**
 * Runs `use` with the current worker once it is ready (started if there is none), in the same
 * microtask as the check: another call may kill the worker while this one waits, and nothing may
 * run between the check and the use. Rejects when the worker cannot start.
 */
async function withWorker<T>(use: (handle: SandboxWorker) => T): Promise<T> {
  for (;;) {
    const handle = current ?? startWorker();
    await handle.ready;
    if (handle === current && handle.state === "ready") return use(handle);
  }
}

const NO_OUTPUT: WorkerOutput[] = [];

/** Logs the worker's output lines (never raw process output). */
function logOutput(output: WorkerOutput[]): void {
  for (const { stream, text } of output) {
    stats.outputLines += 1;
    log.warn("sandbox: QuickJS module output", { stream, output: text.slice(0, OUTPUT_LIMIT) });
  }
}

/** Drops a worker whose module may be corrupt and starts a new one. */
function recycle(handle: SandboxWorker, reason: string): void {
  stop(handle);
  stats.recycles += 1;
  log.warn("sandbox: QuickJS module recycled", {
    reason: reason.slice(0, OUTPUT_LIMIT),
    recycles: stats.recycles,
    ...metricFields(SANDBOX_RECYCLE_METRIC, "data-plane"),
  });
  if (!current) startWorker();
}

/**
 * One request to the worker, answered synchronously; undefined when no answer came within
 * `timeoutMs` (the worker is then killed and a new one started).
 */
function exchange(
  handle: SandboxWorker,
  request: WorkerRequest,
  timeoutMs: number,
  transformId: string,
): WorkerReply | undefined {
  if (handle !== current || handle.state !== "ready") throw new Error("the sandbox worker is not ready");
  const seq = ++handle.seq;
  const started = performance.now();
  const { control } = handle;
  if (request.op === "call") {
    Atomics.store(control, CALL_KEY, request.key);
    Atomics.store(control, CALL_DEADLINE, request.deadlineMs);
    handle.port.postMessage(request.argsJson);
  } else handle.port.postMessage({ ...request, seq });
  Atomics.store(control, REQUEST_SEQ, seq);
  Atomics.notify(control, REQUEST_SEQ);
  const end = started + timeoutMs;
  const spinUntil = started + SPIN_MS;
  while (Atomics.load(control, ANSWER_SEQ) !== seq && performance.now() < spinUntil);
  while (Atomics.load(control, ANSWER_SEQ) !== seq) {
    const left = end - performance.now();
    if (left <= 0) {
      const killStarted = performance.now();
      stop(handle);
      stats.kills += 1;
      stats.lastKillMs = killStarted - started;
      log.warn("sandbox: worker killed at the hard deadline", {
        transformId,
        op: request.op,
        waitedMs: Math.round(killStarted - started),
        kills: stats.kills,
        ...metricFields(SANDBOX_KILL_METRIC, "data-plane"),
      });
      if (!current) startWorker();
      return undefined;
    }
    Atomics.wait(control, ANSWER_SEQ, seq - 1, left);
  }
  for (;;) {
    const received = receiveMessageOnPort(handle.port);
    if (!received) throw new Error(`the sandbox worker answered ${seq} without a message`);
    // A successful call's JSON alone: the worker answers in order, one answer per request, and
    // every earlier answer was read by its own exchange (a worker that missed one was killed).
    if (typeof received.message === "string")
      return { seq, result: { ok: true, json: received.message }, alive: true, output: NO_OUTPUT };
    const reply = received.message as WorkerReply;
    if (reply.seq !== seq) continue;
    logOutput(reply.output);
    if (reply.broken)
      recycle(handle, `${request.op === "dispose" ? "dispose failed" : "host failure"}: ${reply.broken}`);
    return reply;
  }
}

/**
 * This process's sandbox figures: loads (workers that loaded a module: 1 while nothing went
 * wrong), recycles (workers dropped after a host-level failure), kills (workers terminated at the
 * hard deadline), lines of emscripten output routed to the log.
 */
export function sandboxStats(): { loads: number; recycles: number; kills: number; outputLines: number } {
  const { loads, recycles, kills, outputLines } = stats;
  return { loads, recycles, kills, outputLines };
}

/** How many times this process loaded the module (1 while nothing went wrong). */
export function sandboxModuleLoads(): number {
  return stats.loads;
}

// ---- The API ---------------------------------------------------------------------------------

const errorText = (error: unknown) =>
  error instanceof Error ? `${error.name}: ${error.message}` : String(error);

const hostFailure = (text: string): Failed => ({
  ok: false,
  reason: "error",
  message: `the sandbox failed (${text.slice(0, MESSAGE_LIMIT)}); it is reset`,
});

const killed = (during: "call" | "load"): Failed => ({
  ok: false,
  reason: "timeout",
  ...(during === "call" ? { workerLost: true as const } : {}),
  message:
    during === "call"
      ? "the transform ran past its deadline (the sandbox worker was stopped)"
      : "the transform's module (its top level) ran past its load deadline (the sandbox worker was stopped)",
});

/** Counts the nesting of arrays and objects in JSON text (strings skipped). */
export function jsonDepth(json: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (inString) {
      if (c === 92)
        i++; // backslash: skip the escaped character
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 || c === 91) {
      depth++;
      if (depth > max) max = depth;
    } else if (c === 125 || c === 93) depth--;
  }
  return max;
}

/** Makes the transform's context in `handle`; a failure of its code is the answer. */
function compileIn(handle: SandboxWorker, compiled: CompiledTransform): Failed | undefined {
  const { limits } = compiled;
  const reply = exchange(
    handle,
    {
      op: "compile",
      key: compiled.key,
      id: compiled.id,
      javascript: compiled.javascript,
      memoryBytes: limits.memoryBytes,
      maxStackBytes: limits.maxStackBytes,
      loadDeadlineMs: limits.loadDeadlineMs,
      resultLimitChars: RESULT_LIMIT_CHARS,
    },
    limits.loadDeadlineMs + limits.killGraceMs,
    compiled.id,
  );
  if (!reply) {
    compiled.loadTimeout = killed("load");
    return compiled.loadTimeout;
  }
  // A host failure dropped the worker (recycle): as costly as a kill, on every call that compiles it.
  if (reply.broken) return { ...hostFailure(reply.broken), workerLost: true };
  if (reply.result && !reply.result.ok) {
    if (reply.result.reason === "timeout") compiled.loadTimeout = reply.result;
    return reply.result;
  }
  if (reply.alive) compiled.worker = handle;
  return undefined;
}

/**
 * Evaluates the transform's module in a new context (once per configuration load), starting the
 * worker when there is none. A failure of the code itself (a throw at the top level, no default
 * export) is not thrown here: the context is left empty and every call tries again and answers
 * the failure (a top-level timeout is answered without trying again).
 */
export async function compileTransform(
  id: string,
  javascript: string,
  limits: SandboxLimits = sandboxLimits(),
): Promise<CompiledTransform> {
  const codeHash = createHash("sha256").update(javascript).digest("base64url");
  const compiled: CompiledTransform = { id, javascript, codeHash, limits, key: nextKey++ };
  try {
    await withWorker((handle) => compileIn(handle, compiled));
  } catch {
    // The worker could not start: the call answers it.
  }
  return compiled;
}

/**
 * Starts the worker (or waits for the one starting, as after a kill) without compiling anything;
 * rejects when it cannot start. compileTransform and runTransform do this themselves.
 */
export async function warmSandbox(): Promise<void> {
  await withWorker(() => undefined);
}

/**
 * Calls the transform's default export with `args` (JSON values); never throws. A suspended
 * transform is not run (its failure `suspended` is the answer); a call that cost the worker (killed
 * at the hard deadline, or a host failure) counts towards a suspension.
 */
export async function runTransform(compiled: CompiledTransform, args: unknown[]): Promise<TransformResult> {
  let result = suspendedCall(compiled) ?? (await callTransform(compiled, args));
  if (!result.ok && result.workerLost) result = afterWorkerLost(compiled, result);
  if (compiled.retired) disposeTransform(compiled);
  return result;
}

// ---- Suspension (docs/transforms.md "Suspension") --------------------------------------------

/** At most this many transform versions with a suspension state on the instance. */
export const MAX_SUSPENSION_ENTRIES = 1000;
/** The CloudWatch metric counting suspensions. */
export const TRANSFORM_SUSPENSION_METRIC = "TransformSuspensions";
/** Per transform id and code hash: its kills and suspension on this instance. */
const suspensions = new Map<string, SuspensionState>();
let suspensionClock: () => number = Date.now;
let policy: SuspensionPolicy | undefined;
const currentPolicy = () => {
  policy ??= suspensionPolicy();
  return policy;
};
const suspensionKey = (compiled: CompiledTransform) => `${compiled.id}#${compiled.codeHash}`;

function suspendedCall(compiled: CompiledTransform): Failed | undefined {
  const state = suspensions.get(suspensionKey(compiled));
  const suspension = state && suspensionAt(state, suspensionClock());
  if (!suspension) return undefined;
  return {
    ok: false,
    reason: "suspended",
    message: `the transform is ${suspendedMessage(suspension, currentPolicy())}`,
    suspension: { ...suspension, started: false },
  };
}

function afterWorkerLost(compiled: CompiledTransform, result: Failed): Failed {
  const key = suspensionKey(compiled);
  const now = suspensionClock();
  const rules = currentPolicy();
  const started = recordKill(suspensions, key, now, rules, MAX_SUSPENSION_ENTRIES);
  if (!started) return result;
  log.warn("sandbox: transform suspended", {
    transformId: compiled.id,
    until: new Date(started.until).toISOString(),
    cooldownMs: started.cooldownMs,
    ...metricFields(TRANSFORM_SUSPENSION_METRIC, "data-plane"),
  });
  return {
    ...result,
    message: `${result.message}; it is now ${suspendedMessage(started, rules)}`,
    suspension: { ...started, started: true },
  };
}

async function callTransform(compiled: CompiledTransform, args: unknown[]): Promise<TransformResult> {
  if (compiled.loadTimeout) return compiled.loadTimeout;
  const argsJson = JSON.stringify(args);
  if (argsJson.length > ARGS_LIMIT_CHARS) {
    return {
      ok: false,
      reason: "invalid",
      message: `the arguments are ${argsJson.length} characters of JSON, over the limit of ${ARGS_LIMIT_CHARS}`,
    };
  }
  try {
    // Warm: the worker is ready, the call runs now (no wait on its start, no extra await).
    const handle = current;
    if (handle?.state === "ready") return callIn(handle, compiled, argsJson);
    return await withWorker((started) => callIn(started, compiled, argsJson));
  } catch (error) {
    return hostFailure(errorText(error));
  }
}

/** One call, synchronous: the worker cannot change under it. */
function callIn(handle: SandboxWorker, compiled: CompiledTransform, argsJson: string): TransformResult {
  if (compiled.worker !== handle) {
    compiled.worker = undefined;
    const failure = compileIn(handle, compiled);
    if (failure) return failure;
  }
  const { limits } = compiled;
  const reply = exchange(
    handle,
    {
      op: "call",
      key: compiled.key,
      argsJson,
      deadlineMs: limits.deadlineMs,
    },
    limits.deadlineMs + limits.killGraceMs,
    compiled.id,
  );
  if (!reply?.alive) compiled.worker = undefined;
  if (!reply) return killed("call");
  // A host failure dropped the worker (recycle): as costly as a kill.
  if (reply.broken) return { ...hostFailure(reply.broken), workerLost: true };
  if (!reply.result) return hostFailure("no result");
  if (!reply.result.ok) return reply.result;
  const { json } = reply.result;
  if (jsonDepth(json) > RESULT_DEPTH_LIMIT) {
    dispose(compiled);
    return {
      ok: false,
      reason: "invalid",
      message: `the result nests deeper than ${RESULT_DEPTH_LIMIT} levels`,
    };
  }
  return { ok: true, value: JSON.parse(json) };
}

/** Frees the transform's context in the worker, if it has one there. */
function dispose(compiled: CompiledTransform): void {
  const handle = compiled.worker;
  compiled.worker = undefined;
  if (handle && handle === current && handle.state === "ready") {
    exchange(handle, { op: "dispose", key: compiled.key }, compiled.limits.killGraceMs, compiled.id);
  }
}

/** Frees the transform's context (when its configuration is replaced); see `retired`. */
export function disposeTransform(compiled: CompiledTransform): void {
  compiled.retired = true;
  dispose(compiled);
}

/**
 * Test hooks (not used by the data plane): leave an object handle alive in the transform's
 * context, so that freeing its runtime makes QuickJS abort (quickjs-emscripten issues 235, 269).
 */
export const sandboxTestHooks = {
  leakObject(compiled: CompiledTransform): void {
    const handle = compiled.worker;
    if (handle && handle === current && handle.state === "ready")
      exchange(handle, { op: "leak", key: compiled.key }, compiled.limits.killGraceMs, compiled.id);
  },
  /** The last kill: ms from the request to the decision to kill. */
  lastKillMs: () => stats.lastKillMs,
  /** The suspensions' clock (undefined: Date.now) and policy (undefined: from the environment). */
  setSuspensionClock(clock: (() => number) | undefined): void {
    suspensionClock = clock ?? Date.now;
  },
  setSuspensionPolicy(next: SuspensionPolicy | undefined): void {
    policy = next;
  },
  /** Forgets every suspension state; answers how many there were. */
  clearSuspensions(): number {
    const size = suspensions.size;
    suspensions.clear();
    return size;
  },
};
