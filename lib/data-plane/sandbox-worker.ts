/**
 * The transform sandbox's worker thread (started by lib/data-plane/sandbox.ts, which documents the
 * model): QuickJS lives here, so that the main thread can `terminate()` it when a call overruns
 * its deadline inside a builtin, where QuickJS's interrupt handler is never polled.
 *
 * - Start: loads the WebAssembly module (one per worker), runs a warm-up transform in a throwaway
 *   context (so V8 has compiled the wasm paths before any user deadline runs), then posts
 *   `{ready}` on parentPort.
 * - Then a synchronous loop: `Atomics.wait` on the shared control word for work, read the request
 *   with `receiveMessageOnPort`, answer on the same port, bump the answer word and notify. Nothing
 *   here is asynchronous after the start. A call (the warm path) travels as its arguments' JSON
 *   string alone, its key and deadline in the control words, and a call that succeeded without
 *   module output is answered with the result's JSON string alone (sandbox.ts, "Handoff").
 * - Each transform (a `key` from the main thread) gets its own QuickJS runtime and context. A
 *   failure of a call frees its context; the main thread compiles it again before the next call.
 * - A host-level failure (a wasm trap, the host stack exhausted inside wasm, an abort) answers
 *   `broken`: the main thread drops this worker and starts a new one.
 * - The emscripten module's print/printErr lines are returned with the next answer (the main
 *   thread logs them): this thread writes nothing itself.
 */
import { type MessagePort, parentPort, receiveMessageOnPort, workerData } from "node:worker_threads";
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
import type {
  FailureReason,
  WorkerOutput,
  WorkerReply,
  WorkerRequest,
  WorkerResult,
  WorkerSetup,
} from "./sandbox.ts";
import { ANSWER_SEQ, CALL_DEADLINE, CALL_KEY, REQUEST_SEQ } from "./sandbox-control.ts";

const MESSAGE_LIMIT = 500;
const OUTPUT_LIMIT = 1000;
const UNDEFINED_RESULT = "the transform returned undefined, not a JSON value";

class Failure extends Error {
  constructor(
    readonly reason: FailureReason,
    message: string,
  ) {
    super(message);
  }
}

interface Instance {
  runtime: QuickJSRuntime;
  context: QuickJSContext;
  /**
   * The prelude's runner bound to the default export and the result limit: (argsJson) =>
   * resultJson | Promise<resultJson>, the JSON string or INVALID and the reason.
   */
  runner: QuickJSHandle;
  /** The default export. */
  fn: QuickJSHandle;
  /** performance.now() after which the interrupt handler stops the code. */
  deadline: number;
}

/**
 * The first character of a runner's answer that is not a result but why there is none: JSON text
 * never starts with it (and, unlike NUL, it survives QuickJS's C strings).
 */
const INVALID = "!";

/**
 * Evaluated in each new context before the user's module: takes what the runner needs before user
 * code can replace it, makes Date unable to read the clock, and returns the runner's maker
 * (fn, limit) => runner. The runner answers one string per call (its JSON, or INVALID and the
 * reason: not JSON, undefined, over the limit), so the host reads one string and nothing else.
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
  const out = (value, limit) => {
    let json;
    try {
      json = stringify(value);
    } catch (error) {
      if (error instanceof InternalErrorType) throw error;
      return "${INVALID}the result is not JSON: " + String(error);
    }
    if (json === undefined) return "${INVALID}${UNDEFINED_RESULT}";
    if (json.length > limit) return "${INVALID}the result is " + json.length + " characters of JSON, over the limit of " + limit;
    return json;
  };
  return (fn, limit) => {
    const settled = (value) => out(value, limit);
    return (json) => {
      const result = apply(fn, undefined, parse(json));
      if (result !== null && typeof result === "object" && typeof result.then === "function") {
        return result.then(settled);
      }
      return out(result, limit);
    };
  };
})()`;

/** Run once at start in a throwaway context: the first user call then finds the wasm compiled. */
const WARM_UP = `export default function (context, request) {
  request.headers["x-warm"] = context.clientId;
  request.body.b = request.body.a;
  delete request.body.a;
  return Promise.resolve(request);
}`;
const WARM_UP_ARGS = JSON.stringify([{ clientId: "c" }, { headers: {}, body: { a: [1, "x", null] } }]);

// ---- QuickJS ---------------------------------------------------------------------------------

let output: WorkerOutput[] = [];

const interrupted = (during: "call" | "load") =>
  new Failure(
    "timeout",
    during === "call"
      ? "the transform ran past its deadline"
      : "the transform's module (its top level) ran past its load deadline",
  );

function describeError(context: QuickJSContext, error: QuickJSHandle, during: "call" | "load"): Failure {
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
  if (name === "InternalError" && message === "interrupted") return interrupted(during);
  if (message === "out of memory") return new Failure("memory", "the transform ran out of memory");
  if (message === "stack overflow") return new Failure("memory", "the transform overflowed its stack");
  const text = name ? `${name}: ${message}` : message;
  return new Failure("error", text.length > MESSAGE_LIMIT ? `${text.slice(0, MESSAGE_LIMIT)}…` : text);
}

/** Runs pending jobs (promise reactions) until none is left; fails on an error or the deadline. */
function drainJobs(instance: Instance, during: "call" | "load"): void {
  const jobs = instance.runtime.executePendingJobs();
  if (jobs.error) {
    const failure = describeError(jobs.error.context, jobs.error, during);
    jobs.error.dispose();
    throw failure;
  }
}

/** The settled value of `handle` (itself when it is not a promise); the caller disposes both. */
function settle(instance: Instance, handle: QuickJSHandle, during: "call" | "load"): QuickJSHandle {
  const { context } = instance;
  let state = context.getPromiseState(handle);
  if (state.type === "fulfilled" && state.notAPromise) return handle;
  if (state.type === "pending") {
    drainJobs(instance, during);
    state = context.getPromiseState(handle);
  }
  // The interrupt can land in QuickJS's own promise jobs (resuming an `await`), which then drop it
  // (the promise stays pending) or fail otherwise ("not a function"): past the deadline, a promise
  // not fulfilled is the deadline's doing.
  if (state.type !== "fulfilled" && performance.now() > instance.deadline) {
    if (state.type === "rejected") state.error.dispose();
    throw interrupted(during);
  }
  if (state.type === "pending") {
    const what = during === "call" ? "the transform" : "the module";
    throw new Failure("invalid", `${what} returned a promise that never settles`);
  }
  if (state.type === "rejected") {
    const failure = describeError(context, state.error, during);
    state.error.dispose();
    throw failure;
  }
  return state.value;
}

/** Disposes every handle of an instance (a handle left alive makes QuickJS abort the module). */
function disposeInstance(instance: Instance): void {
  for (const item of [instance.fn, instance.runner, instance.context, instance.runtime]) {
    if (item?.alive) item.dispose();
  }
}

function createInstance(
  module: QuickJSWASMModule,
  request: WorkerRequest & { op: "compile" },
  name: string,
): Instance {
  const runtime = module.newRuntime();
  const instance = { runtime, deadline: performance.now() + request.loadDeadlineMs } as Instance;
  try {
    runtime.setMemoryLimit(request.memoryBytes);
    runtime.setMaxStackSize(request.maxStackBytes);
    runtime.setInterruptHandler(() => performance.now() > instance.deadline);
    instance.context = runtime.newContext({ intrinsics: DefaultIntrinsics });
    const { context } = instance;
    const prelude = context.evalCode(PRELUDE, "prelude.js", { type: "global" });
    if (prelude.error) {
      const failure = describeError(context, prelude.error, "load");
      prelude.error.dispose();
      throw failure;
    }
    // The runner's maker until the default export is known (disposed with the instance on failure).
    instance.runner = prelude.value;
    const evaluated = context.evalCode(request.javascript, name, { type: "module" });
    if (evaluated.error) {
      const failure = describeError(context, evaluated.error, "load");
      evaluated.error.dispose();
      throw failure;
    }
    let fn: QuickJSHandle;
    let exports: QuickJSHandle | undefined;
    try {
      exports = settle(instance, evaluated.value, "load");
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
    const maker = instance.runner;
    const limit = context.newNumber(request.resultLimitChars);
    const bound = context.callFunction(maker, context.undefined, fn, limit);
    limit.dispose();
    maker.dispose();
    if (bound.error) {
      const failure = describeError(context, bound.error, "load");
      bound.error.dispose();
      throw failure;
    }
    instance.runner = bound.value;
    return instance;
  } catch (error) {
    // After a failure of the code its handles are freed; after a host failure the worker is
    // dropped whole (disposing could abort again).
    if (error instanceof Failure) disposeInstance(instance);
    throw error;
  }
}

/**
 * The result's JSON text (the depth check and parse are the host's). The runner answers a string:
 * the JSON, or INVALID and the reason. Anything else comes from a thenable that answered a value
 * of its own: undefined, or not JSON.
 */
function readResult(instance: Instance, handle: QuickJSHandle): string {
  const { context } = instance;
  const type = context.typeof(handle);
  if (type !== "string") {
    if (type === "undefined") throw new Failure("invalid", UNDEFINED_RESULT);
    if (type === "object") throw new Failure("invalid", "the result is not JSON");
  }
  const text = context.getString(handle);
  if (text.startsWith(INVALID)) throw new Failure("invalid", text.slice(1, 1 + MESSAGE_LIMIT));
  return text;
}

function call(instance: Instance, argsJson: string, deadlineMs: number): string {
  instance.deadline = performance.now() + deadlineMs;
  const { context } = instance;
  const argsHandle = context.newString(argsJson);
  const called = context.callFunction(instance.runner, context.undefined, argsHandle);
  argsHandle.dispose();
  if (called.error) {
    const failure = describeError(context, called.error, "call");
    called.error.dispose();
    throw failure;
  }
  // Every handle is disposed on every path: a handle left alive when the runtime is freed makes
  // QuickJS abort (list_empty(&rt->gc_obj_list)), which costs the whole module.
  let settled: QuickJSHandle | undefined;
  try {
    settled = settle(instance, called.value, "call");
    return readResult(instance, settled);
  } finally {
    if (settled && settled !== called.value && settled.alive) settled.dispose();
    if (called.value.alive) called.value.dispose();
  }
}

// ---- The loop --------------------------------------------------------------------------------

const errorText = (error: unknown) =>
  error instanceof Error ? `${error.name}: ${error.message}` : String(error);

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

const instances = new Map<number, Instance>();

function handle(module: QuickJSWASMModule, request: WorkerRequest): { result?: WorkerResult } {
  switch (request.op) {
    case "compile": {
      const old = instances.get(request.key);
      if (old) {
        instances.delete(request.key);
        disposeInstance(old);
      }
      instances.set(request.key, createInstance(module, request, `${request.id}.js`));
      return { result: { ok: true, json: "null" } };
    }
    case "call": {
      const instance = instances.get(request.key);
      if (!instance) throw new Error(`no context for transform key ${request.key}`);
      try {
        return {
          result: {
            ok: true,
            json: call(instance, request.argsJson, request.deadlineMs),
          },
        };
      } catch (error) {
        // After any failure the context is thrown away: the next call evaluates the code again.
        instances.delete(request.key);
        if (error instanceof Failure) disposeInstance(instance);
        throw error;
      }
    }
    case "dispose": {
      const instance = instances.get(request.key);
      instances.delete(request.key);
      if (instance) disposeInstance(instance);
      return {};
    }
    case "leak": {
      // Test hook: an object handle left alive, so that freeing the runtime aborts QuickJS.
      instances.get(request.key)?.context.newObject();
      return {};
    }
  }
}

function serve(module: QuickJSWASMModule, port: MessagePort, control: Int32Array): never {
  // The last request served: not read from `control`, which the main thread may already have
  // bumped between the ready message and this line.
  let seen = 0;
  for (;;) {
    Atomics.wait(control, REQUEST_SEQ, seen);
    seen = Atomics.load(control, REQUEST_SEQ);
    const received = receiveMessageOnPort(port);
    if (!received) continue;
    const message = received.message as (WorkerRequest & { seq: number }) | string;
    // A call is its arguments' JSON alone; its key and deadline are in the control words.
    const request: WorkerRequest & { seq: number } =
      typeof message === "string"
        ? {
            op: "call",
            key: Atomics.load(control, CALL_KEY),
            argsJson: message,
            deadlineMs: Atomics.load(control, CALL_DEADLINE),
            seq: seen,
          }
        : message;
    let reply: WorkerReply;
    try {
      const { result } = handle(module, request);
      reply = { seq: request.seq, result, alive: instances.has(request.key), output };
    } catch (error) {
      if (error instanceof Failure) {
        reply = {
          seq: request.seq,
          result: { ok: false, reason: error.reason, message: error.message },
          alive: instances.has(request.key),
          output,
        };
      } else {
        // A failure of the host side: the module may be corrupt; the main thread drops this worker.
        reply = { seq: request.seq, alive: false, output, broken: errorText(error) };
      }
    }
    // A call that succeeded without module output is answered with its JSON alone.
    if (request.op === "call" && reply.result?.ok && reply.alive && output.length === 0)
      port.postMessage(reply.result.json);
    else port.postMessage(reply);
    output = [];
    Atomics.store(control, ANSWER_SEQ, request.seq);
    Atomics.notify(control, ANSWER_SEQ);
  }
}

async function start(): Promise<void> {
  const setup = workerData as WorkerSetup;
  const started = performance.now();
  const collect = (stream: WorkerOutput["stream"]) => (text: string) => {
    output.push({ stream, text: text.slice(0, OUTPUT_LIMIT) });
  };
  // Emscripten reads print and printErr from the options it is given (the type omits them).
  const emscriptenModule: EmscriptenModuleLoaderOptions & Record<string, (text: string) => void> = {
    print: collect("stdout"),
    printErr: collect("stderr"),
  };
  const imported = await import("@jitl/quickjs-wasmfile-release-sync");
  const module = await newQuickJSWASMModuleFromVariant(
    newVariant(defaultExport(imported), { emscriptenModule }),
  );
  const loadedMs = performance.now() - started;
  const warm = createInstance(
    module,
    {
      op: "compile",
      key: 0,
      id: "warm-up",
      javascript: WARM_UP,
      memoryBytes: 8 * 1024 * 1024,
      maxStackBytes: 256 * 1024,
      loadDeadlineMs: 10_000,
      resultLimitChars: 1024,
    },
    "warm-up.js",
  );
  call(warm, WARM_UP_ARGS, 10_000);
  disposeInstance(warm);
  if (!parentPort) throw new Error("sandbox-worker.ts runs only as a worker thread (no parentPort)");
  parentPort.postMessage({ ready: true, loadedMs, warmedMs: performance.now() - started - loadedMs });
  serve(module, setup.port, new Int32Array(setup.control));
}

await start();
