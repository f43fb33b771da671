/**
 * The child process of the bundled-handler bench (bench/bundled.ts), built with esbuild next to
 * the data-plane asset and run by plain `node` (no tsx): a thin HTTP front standing in for the
 * function URL service and Lambda's runtime. Modes (argv[2]):
 * - `handler <index.mjs URL>`: imports the asset's `index.handler` after defining the runtime's
 *   `globalThis.awslambda` (streamifyResponse, HttpResponseStream.from), so the deployed
 *   RESPONSE_STREAM handler runs; each request becomes the payload 2.0 event, and the handler
 *   writes the answer to the Node response, as `awslambda.HttpResponseStream.from` lets it. One
 *   invocation at a time, as a Lambda instance serves them (the others wait in a queue).
 * - `trivial`: the same front and contract around a handler that answers a canned body at once:
 *   the front's own cost, subtracted from the handler's.
 * - `minimal <target URL>`: the floor, a minimal Node reverse proxy (keep-alive agent).
 * IPC: `cpu` → process.cpuUsage(); `invocations` → the [start, answered, end] marks (µs,
 * CLOCK_MONOTONIC, the clock of the keep-alive front's call log) since the last ask;
 * `profile-start` and `profile-stop:<file>` → a CPU profile of the warm process only (the
 * inspector's Profiler, 500 µs sampling), written to <file>, then `profiled`; `exit` →
 * process.exit(0).
 */
import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { Session } from "node:inspector";
import type { AddressInfo } from "node:net";
import { functionUrlEvent, type Invocation } from "./function-url-front.ts";
import { minimalProxy } from "./minimal-proxy.ts";

type Metadata = { statusCode: number; headers: Record<string, string>; cookies?: string[] };
type StreamingHandler = (event: unknown, stream: ServerResponse, context: unknown) => Promise<void>;

const [mode, arg] = process.argv.slice(2);
const nowUs = () => Number(process.hrtime.bigint() / 1000n);
const invocations: Invocation[] = [];

/** `awslambda.HttpResponseStream.from` on a Node response: status, headers, one Set-Cookie each. */
function from(stream: ServerResponse, metadata: Metadata): ServerResponse {
  const headers: Record<string, string | string[]> = { ...metadata.headers };
  if (metadata.cookies?.length) headers["set-cookie"] = metadata.cookies;
  stream.writeHead(metadata.statusCode, headers);
  return stream;
}

const CANNED = Buffer.from(JSON.stringify({ ok: true, items: [1, 2, 3], note: "benchmark target" }));
const trivial: StreamingHandler = async (_event, stream) => {
  from(stream, { statusCode: 200, headers: { "content-type": "application/json" } }).end(CANNED);
};

async function loadHandler(): Promise<StreamingHandler> {
  if (mode === "trivial") return trivial;
  (globalThis as { awslambda?: unknown }).awslambda = {
    streamifyResponse: (handler: StreamingHandler) => handler,
    HttpResponseStream: { from },
  };
  return (await import(arg!)).handler as StreamingHandler;
}

function lambdaFront(handler: StreamingHandler) {
  let tail: Promise<void> = Promise.resolve();
  const invoke = async (req: IncomingMessage, res: ServerResponse, body: Buffer) => {
    const start = nowUs();
    let answered = 0;
    res.once("finish", () => {
      answered = nowUs();
    });
    const requestId = randomUUID();
    const event = functionUrlEvent({
      method: req.method ?? "GET",
      url: req.url ?? "/",
      rawHeaders: req.rawHeaders,
      body,
      sourceIp: req.socket.remoteAddress ?? "127.0.0.1",
      httpVersion: req.httpVersion,
      apiId: "bench",
      requestId,
      now: Date.now(),
    });
    try {
      await handler(event, res, { awsRequestId: requestId, functionName: "data-plane" });
    } catch (error) {
      process.stderr.write(`handler error: ${error instanceof Error ? error.stack : String(error)}\n`);
      if (!res.headersSent) res.writeHead(502);
      if (!res.writableEnded) res.end();
    }
    const end = nowUs();
    invocations.push([start, answered || end, end]);
  };
  return createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      tail = tail.then(() => invoke(req, res, body));
    });
  });
}

const server = mode === "minimal" ? minimalProxy(arg!) : lambdaFront(await loadHandler());
server.keepAliveTimeout = 60_000;
let session: Session | undefined;
const post = (method: string, params?: object) =>
  new Promise<unknown>((resolve, reject) =>
    session!.post(method, params, (error, result) => (error ? reject(error) : resolve(result))),
  );

process.on("message", async (message: string) => {
  if (message === "profile-start") {
    session = new Session();
    session.connect();
    await post("Profiler.enable");
    await post("Profiler.setSamplingInterval", { interval: 500 });
    await post("Profiler.start");
    process.send!({ profiling: true });
  } else if (message.startsWith("profile-stop:")) {
    const { profile } = (await post("Profiler.stop")) as { profile: unknown };
    writeFileSync(message.slice("profile-stop:".length), JSON.stringify(profile));
    session?.disconnect();
    process.send!({ profiled: true });
  } else if (message === "cpu") process.send!({ cpu: process.cpuUsage() });
  else if (message === "invocations") process.send!({ invocations: invocations.splice(0) });
  else if (message === "exit") {
    server.closeAllConnections();
    process.exit(0);
  }
});
// The bench died: do not outlive it.
process.on("disconnect", () => process.exit(0));
server.listen(0, "127.0.0.1", () => process.send!({ port: (server.address() as AddressInfo).port }));
