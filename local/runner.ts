/**
 * The whole service on one machine: provisions the emulator, serves the Core API through the local
 * API Gateway, opens a data-plane address per region, runs the scheduled functions on their
 * schedule and, with `streams`, polls each region's table stream into each stream consumer
 * (local/stream-poller.ts). `npm start` and the end-to-end tests both use it. `stop()` ends them
 * in order, each awaited: the servers (requests in flight finish), the schedules (a run in flight
 * finishes), then the pollers, so nothing calls the emulator once it returns (docs/local-runner.md).
 */

import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Writable } from "node:stream";
import { CORE_API_ROUTES } from "#lib/api/routes.ts";
import { EMULATOR_TIMEOUT_ENV, resetClients } from "#lib/aws/clients.ts";
import { setClock } from "#lib/clock.ts";
import { type AppConfig, getConfig, resetConfig } from "#lib/config.ts";
import { createStreamingHandler, type StreamMetadata } from "#lib/data-plane/function-url.ts";
import { AUTHORIZER_FUNCTION, SCHEDULED_FUNCTIONS } from "#lib/infra/api-manifest.ts";
import { STREAM_CONSUMERS } from "#lib/infra/region-stream.ts";
import { log } from "#lib/log.ts";
import {
  createRestApi,
  type FunctionUrlHandler,
  functionUrlEvent,
  type ProxyHandler,
  type RequestAuthorizer,
  type RouteChange,
} from "./api-gateway.ts";
import { CONSOLE_DIST } from "./console-build.ts";
import { consoleStatic } from "./console-static.ts";
import { provisionStack } from "./provision.ts";
import { allPollers, type StreamHandler, type StreamPoller, startStreamPoller } from "./stream-poller.ts";

export interface LocalStackOptions {
  host?: string;
  /** Core API port; 0 picks a free one. */
  port?: number;
  /** First data-plane port (one per region, consecutive); 0 picks free ones. */
  dataPlanePort?: number;
  /**
   * Where the data planes listen (default: `host`). `::` listens on IPv6 and IPv4 (dual stack), so
   * tests can call a proxy from both families; its URL is then `http://[::1]:<port>`.
   */
  dataPlaneHost?: string;
  runSchedules?: boolean;
  /**
   * With `runSchedules`: run every scheduled function every this many milliseconds instead of on
   * its own schedule (`npm start`'s LOCAL_SCHEDULE_PERIOD_MS; tests make "two idle minutes" of
   * runs happen in seconds). Default: each function's rate (lib/infra/api-manifest.ts).
   */
  schedulePeriodMs?: number;
  /** Poll each region's table stream into each stream consumer, as their event source mappings do. */
  streams?: boolean;
  /**
   * Deliver every stream batch this many more times, unchanged, after its first delivery: Lambda's
   * at-least-once delivery made systematic (tests of the consumers' exactly-once writes).
   */
  streamRedeliveries?: number;
  /**
   * The clock the gateway's windows and expiries read (lib/clock.ts) while this stack runs, in
   * place of the real one: tests place their requests in a window instead of waiting for one.
   */
  clock?: () => number;
  /**
   * The built web console served at the Core API's origin for the paths the API does not own
   * (local/console-static.ts): a directory, or false for none. Default: console/dist when built.
   */
  consoleDir?: string | false;
  /** Told of each answered Core API request that changes something (`npm start` prints a line). */
  onChange?: (change: RouteChange) => void;
}

export interface LocalStack {
  config: AppConfig;
  baseUrl: string;
  /** The MCP endpoint (`{baseUrl}/mcp`, spec 4.15), served by functions/mcp.ts. */
  mcpUrl: string;
  regions: Record<string, string>;
  /** The stream poller, when `streams` is on (tests drain it to wait for delivery). */
  streams?: StreamPoller;
  stop(): Promise<void>;
}

/** The handler, called again with the same event `times` more times (the first answer is kept). */
function redelivering(handler: StreamHandler, times: number): StreamHandler {
  if (times <= 0) return handler;
  return async (event) => {
    const answer = await handler(event);
    for (let i = 0; i < times; i++) await handler(event);
    return answer;
  };
}

async function loadFunction<T>(name: string, exportName = "handler"): Promise<T> {
  const module = (await import(`../functions/${name}.ts`)) as Record<string, unknown>;
  const fn = module[exportName];
  if (typeof fn !== "function") throw new Error(`functions/${name}.ts does not export ${exportName}`);
  return fn as T;
}

async function listen(server: Server, port: number, host: string): Promise<string> {
  const tryPort = (p: number) =>
    new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(p, host, () => resolve());
    });
  try {
    await tryPort(port);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EADDRINUSE" || port === 0) throw error;
    await tryPort(0); // the preferred port is taken: any free one will do
  }
  // An IPv6 host goes in brackets; the unspecified address is reached on loopback.
  const urlHost = host === "::" ? "[::1]" : host.includes(":") ? `[${host}]` : host;
  return `http://${urlHost}:${(server.address() as AddressInfo).port}`;
}

/**
 * A region's data plane: each HTTP request becomes the function URL event (payload 2.0) AWS would
 * send to the regional Lambda, and the same handler (lib/data-plane/function-url.ts) answers it.
 */
/** Lambda's limit on a synchronous invocation's request payload. */
const MAX_FUNCTION_URL_PAYLOAD = 6 * 1024 * 1024;

function dataPlaneServer(region: string, inFlight: Set<Promise<void>>): Server {
  const handler = createStreamingHandler(region, localResponseMetadata);
  return createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_FUNCTION_URL_PAYLOAD) chunks.push(chunk);
    });
    req.on("end", () => {
      // As a function URL does: a request payload above Lambda's 6 MB never reaches the function.
      if (size > MAX_FUNCTION_URL_PAYLOAD) {
        res.writeHead(413, { "content-type": "application/json" });
        res.end(JSON.stringify({ message: "Request Entity Too Large" }));
        return;
      }
      // The path as sent, dot segments and escapes included (the engine refuses dot segments;
      // normalising them here would hide what a deployed function URL may pass through).
      const event = functionUrlEvent(req, Buffer.concat(chunks), `local-${region}`);
      // As a function URL in RESPONSE_STREAM mode: the answer is written and ended first, then the
      // handler goes on with the request log (lib/data-plane/function-url.ts). A stop waits for
      // that work too.
      const handled = handler(event, res)
        .catch((error: unknown) => {
          process.stderr.write(
            `local data plane error: ${error instanceof Error ? error.stack : String(error)}\n`,
          );
          if (!res.headersSent) res.writeHead(500);
          if (!res.writableEnded) res.end();
        })
        .finally(() => inFlight.delete(handled));
      inFlight.add(handled);
    });
  });
}

/** `awslambda.HttpResponseStream.from` for a Node response: the status, headers and cookies. */
function localResponseMetadata(stream: Writable, metadata: StreamMetadata): Writable {
  const res = stream as ServerResponse;
  // As a function URL does: each of `cookies` becomes its own Set-Cookie header.
  const headers: Record<string, string | string[]> = { ...metadata.headers };
  if (metadata.cookies?.length) headers["set-cookie"] = metadata.cookies;
  res.writeHead(metadata.statusCode, headers);
  return res;
}

/** How long a stop waits for requests in flight before it closes their connections. */
const STOP_GRACE_MS = 5_000;

/** Resolves when every promise of `pending` (as it is when called) has settled, or after `ms`. */
async function settled(pending: Iterable<Promise<unknown>>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.allSettled([...pending]),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(timer);
}

/**
 * A scheduled function run every `periodMs` (the first run one period after the start), one run
 * at a time: the next period starts when a run ends. `stop` cancels what is planned and waits for
 * a run in flight.
 */
function schedule(name: string, periodMs: number): { stop(): Promise<void> } {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  const run = async () => {
    const started = performance.now();
    try {
      const fn = await loadFunction<() => Promise<unknown>>(name);
      const result = await fn();
      // Periodic work is not news: debug (LOG_LEVEL=debug shows it).
      log.debug("Scheduled function ran", {
        function: name,
        ms: Math.round(performance.now() - started),
        result,
      });
    } catch (error) {
      process.stderr.write(`scheduled ${name} failed: ${String(error)}\n`);
    }
  };
  const plan = () => {
    timer = setTimeout(() => {
      running = run().finally(() => {
        running = undefined;
        if (!stopped) plan();
      });
    }, periodMs);
  };
  plan();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}

function scheduleEveryMs(expression: string): number {
  const match = /^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$/.exec(expression);
  if (!match) throw new Error(`Unsupported schedule ${expression}`);
  const unit = { minute: 60_000, hour: 3_600_000, day: 86_400_000 }[match[2]!.replace(/s$/, "") as "minute"];
  return Number(match[1]) * unit;
}

export async function startLocalStack(options: LocalStackOptions = {}): Promise<LocalStack> {
  resetConfig();
  resetClients();
  // Locally, targets and token endpoints usually run on this machine: allow loopback unless told
  // otherwise. Link-local and metadata addresses stay blocked whatever the setting.
  process.env.OUTBOUND_ALLOW_LOOPBACK ??= "true";
  for (const [name, value] of Object.entries(EMULATOR_TIMEOUT_ENV)) process.env[name] ??= value;
  const config = getConfig();
  const host = options.host ?? "127.0.0.1";
  await provisionStack(config);
  const previousClock = options.clock ? setClock(options.clock) : undefined;

  const authorizer = await loadFunction<RequestAuthorizer>(AUTHORIZER_FUNCTION.name);
  const handlers = new Map<string, Promise<ProxyHandler>>();
  const api = createRestApi({
    routes: CORE_API_ROUTES,
    // The MCP function URL on the Core API's port: `/mcp`, and the OAuth 2.1 documents and
    // endpoints it answers (`/.well-known/*`, `/oauth/*`).
    functionUrls: [
      {
        matches: (path) =>
          path === "/mcp" || path.startsWith("/mcp/") || /^\/(\.well-known|oauth)\//.test(path),
        loadHandler: () => loadFunction<FunctionUrlHandler>("mcp"),
      },
    ],
    authorizer,
    region: config.homeRegion,
    fallback: options.consoleDir === false ? undefined : consoleStatic(options.consoleDir ?? CONSOLE_DIST),
    onChange: options.onChange,
    loadHandler: (group) => {
      let handler = handlers.get(group);
      if (!handler) {
        handler = loadFunction<ProxyHandler>(group);
        handlers.set(group, handler);
      }
      return handler;
    },
  });
  const servers: Server[] = [];
  const apiServer = await api.listen(options.port ?? 0, host);
  servers.push(apiServer.server);
  const dataPlaneInFlight = new Set<Promise<void>>();

  const regions: Record<string, string> = {};
  for (const [index, region] of config.regions.entries()) {
    const server = dataPlaneServer(region, dataPlaneInFlight);
    servers.push(server);
    const port = options.dataPlanePort ? options.dataPlanePort + index : 0;
    regions[region] = await listen(server, port, options.dataPlaneHost ?? host);
  }

  // Proxies show their data-plane URL: tell the handlers (they run in this process) where each region is.
  process.env.DATA_PLANE_URLS = JSON.stringify(regions);
  // The MCP endpoint answers only to the names this machine serves it under (DNS rebinding).
  process.env.MCP_ALLOWED_HOSTS ??= ["localhost", "127.0.0.1", "[::1]", host].join(",");
  // Links in e-mails go to this Core API unless APP_URL says otherwise: `localhost` with its real
  // port (a browser's WebAuthn needs a name, not 127.0.0.1). Taken back on stop.
  const ownAppUrl = process.env.APP_URL === undefined;
  if (ownAppUrl) process.env.APP_URL = `http://localhost:${new URL(apiServer.url).port}`;
  resetConfig();

  // One poller per event source mapping (docs/streams.md): each reads the stream on its own.
  const streams = options.streams
    ? allPollers(
        await Promise.all(
          STREAM_CONSUMERS.map(async (consumer) =>
            startStreamPoller({
              regions: config.regions,
              tableName: config.tableName,
              handler: redelivering(
                await loadFunction<StreamHandler>(consumer.function),
                options.streamRedeliveries ?? 0,
              ),
              patterns: consumer.patterns(),
              settings: consumer.settings,
              ...(options.clock ? { clock: options.clock } : {}),
            }),
          ),
        ),
      )
    : undefined;

  const schedules = options.runSchedules
    ? Object.values(SCHEDULED_FUNCTIONS).map((scheduled) =>
        schedule(scheduled.name, options.schedulePeriodMs ?? scheduleEveryMs(scheduled.schedule)),
      )
    : [];

  return {
    config: getConfig(),
    baseUrl: apiServer.url,
    mcpUrl: `${apiServer.url}/mcp`,
    regions,
    streams,
    async stop() {
      // 1. No new requests; those in flight finish (a bounded wait), then every connection closes.
      const closed = servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve())));
      for (const server of servers) server.closeIdleConnections();
      await settled([...apiServer.inFlight, ...dataPlaneInFlight], STOP_GRACE_MS);
      for (const server of servers) server.closeAllConnections();
      await Promise.all(closed);
      // 2. No new scheduled run; a run in flight finishes. 3. The pollers end their last poll.
      await Promise.all(schedules.map((scheduled) => scheduled.stop()));
      await streams?.stop();
      if (previousClock) setClock(previousClock);
      if (ownAppUrl) {
        delete process.env.APP_URL;
        resetConfig();
      }
    },
  };
}
