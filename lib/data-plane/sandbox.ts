/**
 * The transform sandbox (issue 10, "Running code"): user JavaScript in QuickJS compiled to
 * WebAssembly (quickjs-emscripten, sync release build 0.31.0; 0.32.0 aborts when a context is
 * disposed after running out of memory, its issue 257).
 *
 * - One WebAssembly module per warm instance, loaded on the first compile (~30 ms).
 * - Each transform gets its own QuickJS runtime and context: its own heap with a memory limit
 *   (`TRANSFORM_MEMORY_LIMIT_MB`, default 16), a stack limit (256 KiB) and a deadline per call
 *   (`TRANSFORM_DEADLINE_MS`, default 50) enforced by the interrupt handler.
 * - No host API: nothing of the host is put in the context (no timers, console, fetch, process,
 *   filesystem), and `Date` cannot read the clock (`Date.now()`, `new Date()` and `Date()` throw;
 *   `new Date(ms)` and `Date.parse` work).
 * - Arguments go in as one JSON string and the result comes out as one JSON string, capped at
 *   `RESULT_LIMIT_CHARS` and `RESULT_DEPTH_LIMIT`: no handle to a host object ever exists inside.
 * - Reuse: the context is compiled once per `compileTransform` (once per configuration load) and
 *   reused by every call of that transform, as Workers reuse isolates. Module-level state of a
 *   transform therefore survives from one request to the next of the same transform on the same
 *   instance (never across transforms: each has its own runtime). After any failure the context
 *   is thrown away and the next call evaluates the code again in a new one.
 * - When a call fails in the host rather than in QuickJS (a wasm trap, the host stack exhausted
 *   inside wasm), the module is in an unknown state: it is dropped and the next call loads a new
 *   one and recompiles the transform there.
 * - The emscripten module's own output (print, printErr: QuickJS's "Aborted(Assertion failed:
 *   list_empty(&rt->gc_obj_list)...)" when a runtime that still holds objects is freed, its
 *   issues 235 and 269) goes to our logger, never to raw stdout/stderr; each recycle of the module
 *   is counted (`sandboxStats()`) and logged with a CloudWatch metric (`SandboxModuleRecycles`).
 *
 * Nothing in the data plane imports this file at start: it is loaded with import() when a proxy
 * has a transform, so the cold start of a proxy without transforms never reads QuickJS. In the
 * Lambda asset it is its own entry, `sandbox.mjs`, with the wasm beside its loader chunk
 * (cdk/bundle.ts).
 */
import {
  DefaultIntrinsics,
  type EmscriptenModuleLoaderOptions,
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSContext,
  type QuickJSHandle,
  type QuickJSRuntime,
  type QuickJSSyncVariant,
  type QuickJSWASMModule,
} from "quickjs-emscripten-core";
import { log, metricFields } from "../log.ts";

export const DEFAULT_MEMORY_LIMIT_MB = 16;
export const DEFAULT_DEADLINE_MS = 50;
/**
 * QuickJS's stack limit. Wasm frames run on the host's own stack: at 512 KiB a deep recursion
 * exhausts Node's stack before QuickJS notices (then the module is recreated); 256 KiB stops it
 * inside QuickJS at a depth of about 1,300 plain calls.
 */
export const MAX_STACK_BYTES = 256 * 1024;
/** The result's JSON, in characters. */
export const RESULT_LIMIT_CHARS = 6 * 1024 * 1024;
/** Nesting of arrays and objects in the result. */
export const RESULT_DEPTH_LIMIT = 64;
const MESSAGE_LIMIT = 500;

export interface SandboxLimits {
  memoryBytes: number;
  deadlineMs: number;
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
    maxStackBytes: MAX_STACK_BYTES,
  };
}

export type FailureReason = "timeout" | "memory" | "error" | "invalid";
export type TransformResult =
  | { ok: true; value: unknown }
  | { ok: false; reason: FailureReason; message: string };

interface Instance {
  module: QuickJSWASMModule;
  runtime: QuickJSRuntime;
  context: QuickJSContext;
  /** The prelude's runner: (fn, argsJson) => resultJson | Promise<resultJson>. */
  runner: QuickJSHandle;
  /** The default export. */
  fn: QuickJSHandle;
  /** performance.now() after which the interrupt handler stops the code. */
  deadline: number;
}

export interface CompiledTransform {
  readonly id: string;
  readonly javascript: string;
  readonly limits: SandboxLimits;
  /** Its live context, or none after a failure (made again on the next call). */
  instance?: Instance;
  /**
   * Set by disposeTransform: its configuration was replaced. A request still holding it (one that
   * began before the replacement) may call it again; the context made for that call is disposed
   * right after it, so nothing is left behind.
   */
  retired?: boolean;
}

class Failure extends Error {
  constructor(
    readonly reason: FailureReason,
    message: string,
  ) {
    super(message);
  }
}

// ---- The module: one per warm instance -------------------------------------------------------

/** The CloudWatch metric counting module recycles (EMF on the log line, lib/log.ts). */
export const SANDBOX_RECYCLE_METRIC = "SandboxModuleRecycles";
const OUTPUT_LIMIT = 1000;

let modulePromise: Promise<QuickJSWASMModule> | undefined;
/** The loaded module, once modulePromise has resolved. */
let loadedModule: QuickJSWASMModule | undefined;
const stats = { loads: 0, recycles: 0, outputLines: 0 };

/** The emscripten module's print/printErr: one log line each, never raw process output. */
function moduleOutput(stream: "stdout" | "stderr") {
  return (text: string) => {
    stats.outputLines += 1;
    log.warn("sandbox: QuickJS module output", { stream, output: text.slice(0, OUTPUT_LIMIT) });
  };
}

/**
 * The variant of `import()`: its `default`, or `default.default` when the import sees the
 * CommonJS build (TypeScript types it so; Node and esbuild load the ESM one).
 */
function defaultExport(imported: object): QuickJSSyncVariant {
  let value: unknown = imported;
  while (value !== null && typeof value === "object" && "default" in value && !("type" in value))
    value = value.default;
  return value as QuickJSSyncVariant;
}

function loadModule(): Promise<QuickJSWASMModule> {
  if (!modulePromise) {
    stats.loads += 1;
    // Emscripten reads print and printErr from the options it is given (the type omits them).
    const emscriptenModule: EmscriptenModuleLoaderOptions & Record<string, (text: string) => void> = {
      print: moduleOutput("stdout"),
      printErr: moduleOutput("stderr"),
    };
    const loading = import("@jitl/quickjs-wasmfile-release-sync").then((imported) =>
      newQuickJSWASMModuleFromVariant(newVariant(defaultExport(imported), { emscriptenModule })),
    );
    modulePromise = loading;
    loading.then(
      (module) => {
        if (modulePromise === loading) loadedModule = module;
      },
      () => {
        if (modulePromise === loading) modulePromise = undefined;
      },
    );
  }
  return modulePromise;
}

/**
 * Drops the module (`reason` says why, for the log): the next call loads a new one. Contexts of
 * the old one are not touched.
 */
export function discardSandboxModule(reason: string): void {
  if (!modulePromise) return;
  modulePromise = undefined;
  loadedModule = undefined;
  stats.recycles += 1;
  log.warn("sandbox: QuickJS module recycled", {
    reason: reason.slice(0, OUTPUT_LIMIT),
    recycles: stats.recycles,
    ...metricFields(SANDBOX_RECYCLE_METRIC, "data-plane"),
  });
}

/**
 * This process's module figures: loads (1 while nothing went wrong), recycles (modules dropped
 * after a host-level failure), and lines of emscripten output routed to the log.
 */
export function sandboxStats(): Readonly<typeof stats> {
  return { ...stats };
}

/** How many times this process loaded the module (1 while nothing went wrong). */
export function sandboxModuleLoads(): number {
  return stats.loads;
}

// ---- Inside the context ----------------------------------------------------------------------

/**
 * Evaluated in each new context before the user's module: takes what the runner needs before user
 * code can replace it, makes Date unable to read the clock, and returns the runner.
 */
const PRELUDE = `(() => {
  const parse = JSON.parse, stringify = JSON.stringify, apply = Reflect.apply;
  const construct = Reflect.construct, InternalErrorType = InternalError;
  const RealDate = Date;
  const noClock = (what) => { throw new TypeError(what + " reads the clock, which a transform cannot: use context.receivedAt"); };
  function SandboxDate(...args) {
    if (new.target === undefined) noClock("Date()");
    if (args.length === 0) noClock("new Date()");
    return construct(RealDate, args, new.target);
  }
  SandboxDate.prototype = RealDate.prototype;
  Object.defineProperty(RealDate.prototype, "constructor", { value: SandboxDate, writable: true, configurable: true });
  SandboxDate.UTC = RealDate.UTC;
  SandboxDate.parse = RealDate.parse;
  SandboxDate.now = () => noClock("Date.now()");
  globalThis.Date = SandboxDate;
  const out = (value) => {
    try {
      return stringify(value);
    } catch (error) {
      if (error instanceof InternalErrorType) throw error;
      return { invalid: "the result is not JSON: " + String(error) };
    }
  };
  return (fn, json) => {
    const result = apply(fn, undefined, parse(json));
    if (result !== null && typeof result === "object" && typeof result.then === "function") {
      return result.then(out);
    }
    return out(result);
  };
})()`;

function describeError(context: QuickJSContext, error: QuickJSHandle): Failure {
  let name = "";
  let message = "";
  try {
    if (context.typeof(error) === "object") {
      const nameHandle = context.getProp(error, "name");
      const messageHandle = context.getProp(error, "message");
      if (context.typeof(nameHandle) === "string") name = context.getString(nameHandle);
      if (context.typeof(messageHandle) === "string") message = context.getString(messageHandle);
      nameHandle.dispose();
      messageHandle.dispose();
    } else if (context.typeof(error) === "string") {
      message = context.getString(error);
    } else {
      message = `a ${context.typeof(error)} was thrown`;
    }
  } catch {
    // Reading the error failed (typically no memory left): the limit is the likely cause.
    return new Failure("memory", "the transform ran out of memory");
  }
  if (name === "InternalError" && message === "interrupted") {
    return new Failure("timeout", "the transform ran past its deadline");
  }
  if (message === "out of memory") return new Failure("memory", "the transform ran out of memory");
  if (message === "stack overflow") return new Failure("memory", "the transform overflowed its stack");
  const text = name ? `${name}: ${message}` : message;
  return new Failure("error", text.length > MESSAGE_LIMIT ? `${text.slice(0, MESSAGE_LIMIT)}…` : text);
}

/** Runs pending jobs (promise reactions) until none is left; fails on an error or the deadline. */
function drainJobs(instance: Instance): void {
  const jobs = instance.runtime.executePendingJobs();
  if (jobs.error) {
    const context = jobs.error.context;
    const failure = describeError(context, jobs.error);
    jobs.error.dispose();
    throw failure;
  }
}

/** The settled value of `handle` (itself when it is not a promise); the caller disposes both. */
function settle(instance: Instance, handle: QuickJSHandle, what: string): QuickJSHandle {
  const { context } = instance;
  let state = context.getPromiseState(handle);
  if (state.type === "fulfilled" && state.notAPromise) return handle;
  if (state.type === "pending") {
    drainJobs(instance);
    state = context.getPromiseState(handle);
  }
  if (state.type === "pending") throw new Failure("invalid", `${what} returned a promise that never settles`);
  if (state.type === "rejected") {
    const failure = describeError(context, state.error);
    state.error.dispose();
    throw failure;
  }
  return state.value;
}

function createInstance(module: QuickJSWASMModule, compiled: CompiledTransform): Instance {
  const runtime = module.newRuntime();
  const instance = { module, runtime, deadline: performance.now() + compiled.limits.deadlineMs } as Instance;
  try {
    runtime.setMemoryLimit(compiled.limits.memoryBytes);
    runtime.setMaxStackSize(compiled.limits.maxStackBytes);
    runtime.setInterruptHandler(() => performance.now() > instance.deadline);
    instance.context = runtime.newContext({ intrinsics: DefaultIntrinsics });
    const { context } = instance;
    const prelude = context.evalCode(PRELUDE, "prelude.js", { type: "global" });
    if (prelude.error) {
      const failure = describeError(context, prelude.error);
      prelude.error.dispose();
      throw failure;
    }
    instance.runner = prelude.value;
    const evaluated = context.evalCode(compiled.javascript, `${compiled.id}.js`, { type: "module" });
    if (evaluated.error) {
      const failure = describeError(context, evaluated.error);
      evaluated.error.dispose();
      throw failure;
    }
    let fn: QuickJSHandle;
    let exports: QuickJSHandle | undefined;
    try {
      exports = settle(instance, evaluated.value, "the module");
      fn = context.getProp(exports, "default");
    } finally {
      if (exports && exports !== evaluated.value && exports.alive) exports.dispose();
      if (evaluated.value.alive) evaluated.value.dispose();
    }
    if (context.typeof(fn) !== "function") {
      fn.dispose();
      throw new Failure("invalid", "the code has no default export function");
    }
    instance.fn = fn;
    return instance;
  } catch (error) {
    if (error instanceof Failure) disposeQuietly(instance);
    throw error;
  }
}

/** Disposes after a failure; when even that fails, the module itself is suspect. */
function disposeQuietly(instance: Instance): void {
  try {
    for (const item of [instance.fn, instance.runner, instance.context, instance.runtime]) {
      if (item?.alive) item.dispose();
    }
  } catch (error) {
    if (instance.module === loadedModule) discardSandboxModule(`dispose failed: ${errorText(error)}`);
  }
}

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

function readResult(instance: Instance, handle: QuickJSHandle): unknown {
  const { context } = instance;
  const type = context.typeof(handle);
  if (type === "undefined")
    throw new Failure("invalid", "the transform returned undefined, not a JSON value");
  if (type === "object") {
    const invalid = context.getProp(handle, "invalid");
    const message =
      context.typeof(invalid) === "string" ? context.getString(invalid) : "the result is not JSON";
    invalid.dispose();
    throw new Failure("invalid", message.slice(0, MESSAGE_LIMIT));
  }
  const length = context.getProp(handle, "length");
  const chars = context.getNumber(length);
  length.dispose();
  if (chars > RESULT_LIMIT_CHARS) {
    throw new Failure(
      "invalid",
      `the result is ${chars} characters of JSON, over the limit of ${RESULT_LIMIT_CHARS}`,
    );
  }
  const json = context.getString(handle);
  if (jsonDepth(json) > RESULT_DEPTH_LIMIT) {
    throw new Failure("invalid", `the result nests deeper than ${RESULT_DEPTH_LIMIT} levels`);
  }
  return JSON.parse(json);
}

// ---- The API ---------------------------------------------------------------------------------

const errorText = (error: unknown) =>
  error instanceof Error ? `${error.name}: ${error.message}` : String(error);

function failureOf(error: unknown): TransformResult & { ok: false } {
  if (error instanceof Failure) return { ok: false, reason: error.reason, message: error.message };
  // A failure of the host side (a wasm trap, the host stack exhausted inside wasm, a handle
  // misuse): the module may be corrupt, so it is dropped.
  const text = errorText(error);
  discardSandboxModule(`host failure: ${text}`);
  return {
    ok: false,
    reason: "error",
    message: `the sandbox failed (${text.slice(0, MESSAGE_LIMIT)}); it is reset`,
  };
}

/**
 * Evaluates the transform's module in a new context (once per configuration load). A failure of
 * the code itself (a throw at the top level, no default export) is not thrown here: the context
 * is left empty and every call tries again and answers the failure.
 */
export async function compileTransform(
  id: string,
  javascript: string,
  limits: SandboxLimits = sandboxLimits(),
): Promise<CompiledTransform> {
  const compiled: CompiledTransform = { id, javascript, limits };
  const module = await loadModule();
  try {
    compiled.instance = createInstance(module, compiled);
  } catch (error) {
    failureOf(error);
  }
  return compiled;
}

/** Calls the transform's default export with `args` (JSON values); never throws. */
export async function runTransform(compiled: CompiledTransform, args: unknown[]): Promise<TransformResult> {
  const result = await callTransform(compiled, args);
  if (compiled.retired) disposeTransform(compiled);
  return result;
}

async function callTransform(compiled: CompiledTransform, args: unknown[]): Promise<TransformResult> {
  let module: QuickJSWASMModule;
  try {
    module = await loadModule();
  } catch (error) {
    return failureOf(error);
  }
  let instance = compiled.instance;
  // A context of a dropped module is abandoned with it (never disposed: the module is suspect).
  if (instance && instance.module !== module) instance = compiled.instance = undefined;
  try {
    if (!instance) instance = compiled.instance = createInstance(module, compiled);
    instance.deadline = performance.now() + compiled.limits.deadlineMs;
    const { context } = instance;
    const argsHandle = context.newString(JSON.stringify(args));
    const called = context.callFunction(instance.runner, context.undefined, instance.fn, argsHandle);
    argsHandle.dispose();
    if (called.error) {
      const failure = describeError(context, called.error);
      called.error.dispose();
      throw failure;
    }
    // Every handle is disposed on every path: a handle left alive when the runtime is freed makes
    // QuickJS abort (list_empty(&rt->gc_obj_list)), which costs the whole module.
    let settled: QuickJSHandle | undefined;
    try {
      settled = settle(instance, called.value, "the transform");
      return { ok: true, value: readResult(instance, settled) };
    } finally {
      if (settled && settled !== called.value && settled.alive) settled.dispose();
      if (called.value.alive) called.value.dispose();
    }
  } catch (error) {
    const failure = failureOf(error);
    // After a host failure the module is dropped with its contexts, undisposed.
    if (compiled.instance && error instanceof Failure) disposeQuietly(compiled.instance);
    compiled.instance = undefined;
    return failure;
  }
}

/** Frees the transform's context (when its configuration is replaced); see `retired`. */
export function disposeTransform(compiled: CompiledTransform): void {
  compiled.retired = true;
  if (compiled.instance) disposeQuietly(compiled.instance);
  compiled.instance = undefined;
}
