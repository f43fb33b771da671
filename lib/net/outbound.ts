/**
 * The one HTTP client for every request the gateway sends to a URL a user supplied (credential
 * test, OAuth2 token URLs, JWKS, custom token endpoints, the data plane). It enforces the SSRF
 * policy of `address-policy.ts`:
 * - only http: and https: URLs;
 * - a literal IP host (in any spelling the URL parser accepts) is judged before connecting;
 * - a host name is resolved by our own `lookup` at connect time, and the connection is refused
 *   when ANY resolved address is blocked. The check runs on the addresses the socket actually
 *   uses, so DNS rebinding (a name that answers public first and private later) cannot pass;
 * - redirects are off by default; when allowed they are followed here, hop by hop, each hop's
 *   URL going through the same checks.
 * Responses are read up to a byte limit and a deadline covers the whole exchange.
 * Compressed answers are decoded here, bounded by the same limit (content-coding.ts): every reader
 * of a body gets the decoded bytes, and the target is asked only for codings the gateway decodes
 * (`Accept-Encoding`, whatever the caller of the gateway sent).
 * See docs/outbound-requests.md.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from "node:dns";
import {
  type ClientRequest,
  Agent as HttpAgent,
  request as httpRequest,
  type IncomingMessage,
} from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { isIP, type LookupFunction } from "node:net";
import { loadOnce } from "#lib/lazy.ts";
import { isBlockedAddress, parseHostLiteral } from "./address-policy.ts";

/** The codings the gateway decodes: what it asks a target for (`Accept-Encoding`) and takes from a caller. */
export const ACCEPTED_CODINGS = "gzip, deflate, br, zstd";

/** The decoders (content-coding.ts), loaded on the first coded answer: most answers are not. */
const contentCoding = loadOnce(() => import("./content-coding.ts"));

export interface OutboundPolicy {
  allowPrivate: boolean;
  allowLoopback: boolean;
}

export interface OutboundRequest {
  method: string;
  url: string | URL;
  headers?: Record<string, string>;
  body?: Buffer | string;
  /** Deadline for the whole exchange including redirects and the body (default 30 s). */
  timeoutMs?: number;
  /** Redirects to follow (default 0: a 3xx response is returned as it is). */
  maxRedirects?: number;
  /**
   * Bytes of response body kept (default 6 MiB), before and after decoding its Content-Encoding;
   * beyond it reading stops and `truncated` is set (a body too large once decoded: empty).
   */
  maxResponseBytes?: number;
  /** Default: `outboundPolicyFromEnv()`. */
  policy?: OutboundPolicy;
}

export interface OutboundResponse {
  status: number;
  /** Without `content-encoding` and `content-length` when the body was decoded. */
  headers: Record<string, string | string[]>;
  /** Decoded from its Content-Encoding. */
  body: Buffer;
  truncated: boolean;
  /** Epoch milliseconds: request start, response headers of the final hop, body read. */
  timings: { startedAt: number; headersAt: number; endedAt: number };
  /** The URL of the final hop (differs from the request URL after redirects). */
  url: string;
}

export const DEFAULT_OUTBOUND_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_RESPONSE_BYTES = 6 * 1024 * 1024;

/** Base class of the errors below. Messages name the host at most, never a path or query. */
export class OutboundError extends Error {
  override name = "OutboundError";
}

/** The URL, a literal address, a resolved address or a redirect target is not allowed. */
export class OutboundBlockedError extends OutboundError {
  override name = "OutboundBlockedError";
  readonly reason: string;
  constructor(reason: string, host?: string) {
    super(host ? `Outbound request to ${host} blocked: ${reason}` : `Outbound request blocked: ${reason}`);
    this.reason = reason;
  }
}

/** The deadline passed before the response was read completely. */
export class OutboundTimeoutError extends OutboundError {
  override name = "OutboundTimeoutError";
  constructor(host: string, timeoutMs: number) {
    super(`Outbound request to ${host} timed out after ${timeoutMs} ms`);
  }
}

/** The answer's Content-Encoding is unknown, or its bytes are not valid in it (too large: `truncated`). */
export class OutboundDecodeError extends OutboundError {
  override name = "OutboundDecodeError";
  readonly failure: "unsupported" | "corrupt";
  readonly coding: string;
  constructor(host: string, failure: "unsupported" | "corrupt", coding: string) {
    super(`Outbound response of ${host}: ${failure} content coding ${coding}`);
    this.failure = failure;
    this.coding = coding;
  }
}

/** No usable connection (refused, reset, unknown host, TLS failure...). */
export class OutboundConnectError extends OutboundError {
  override name = "OutboundConnectError";
  readonly code: string | undefined;
  constructor(host: string, code: string | undefined, options?: { cause?: unknown }) {
    super(`Outbound request to ${host} failed: ${code ?? "connection error"}`, options);
    this.code = code;
  }
}

/** OUTBOUND_ALLOW_LOOPBACK=true and OUTBOUND_ALLOW_PRIVATE=true relax the policy; default both off. */
export function outboundPolicyFromEnv(): OutboundPolicy {
  return {
    allowPrivate: process.env.OUTBOUND_ALLOW_PRIVATE === "true",
    allowLoopback: process.env.OUTBOUND_ALLOW_LOOPBACK === "true",
  };
}

/** dns.lookup wrapper that refuses the connection when any resolved address is blocked. */
function guardedLookup(policy: OutboundPolicy): LookupFunction {
  return (hostname, options, callback) => {
    const lookupOptions: LookupOptions = { family: options.family, hints: options.hints, all: true };
    dnsLookup(hostname, { ...lookupOptions, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, "", 0);
      const first = addresses[0];
      if (!first) {
        const notFound: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
        notFound.code = "ENOTFOUND";
        return callback(notFound, "", 0);
      }
      for (const { address } of addresses) {
        const verdict = isBlockedAddress(address, policy);
        if (verdict.blocked) {
          const reason = `${verdict.reason}; ${hostname} resolves to ${address}`;
          return callback(new OutboundBlockedError(reason, hostname), "", 0);
        }
      }
      if ((options as { all?: boolean }).all) return callback(null, addresses);
      return callback(null, first.address, first.family);
    });
  };
}

/** The keep-alive agents of one policy: one for http:, one for https:. */
interface PolicyAgents {
  http: HttpAgent;
  https: HttpsAgent;
  /** Exchanges in progress on these agents; `closeOutboundAgents` lets them finish. */
  active: Set<Promise<unknown>>;
}

const agents = new Map<string, PolicyAgents>();

/** Idle keep-alive sockets are closed after this (or sooner when the server says so). */
const KEEP_ALIVE_TIMEOUT_MS = 10_000;
/** Deadline for establishing a connection (TCP and TLS). */
const CONNECT_TIMEOUT_MS = 10_000;

/** One pair of keep-alive agents per policy for the life of the process (Lambda container). */
function agentsFor(policy: OutboundPolicy): PolicyAgents {
  const key = `${policy.allowPrivate}:${policy.allowLoopback}`;
  let entry = agents.get(key);
  if (!entry) {
    // `lookup` reaches net.connect / tls.connect through the agent's options; literal IP hosts
    // skip it (they were judged by checkUrl).
    const options = {
      keepAlive: true,
      maxSockets: 64,
      timeout: KEEP_ALIVE_TIMEOUT_MS,
      lookup: guardedLookup(policy),
    };
    entry = { http: new HttpAgent(options), https: new HttpsAgent(options), active: new Set() };
    agents.set(key, entry);
  }
  return entry;
}

/** Closes the cached agents (tests, graceful shutdown): exchanges in progress finish first. */
export async function closeOutboundAgents(): Promise<void> {
  const all = [...agents.values()];
  agents.clear();
  await Promise.all(
    all.map(async (entry) => {
      await Promise.allSettled([...entry.active]);
      entry.http.destroy();
      entry.https.destroy();
    }),
  );
}

/** Parses and checks a URL before any connection: scheme and literal IP host. */
function checkUrl(input: string | URL, policy: OutboundPolicy): URL {
  let url: URL;
  try {
    url = new URL(String(input));
  } catch {
    throw new OutboundBlockedError("invalid URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new OutboundBlockedError(`scheme ${url.protocol.replace(/:$/, "")} not allowed`, url.host);
  }
  if (url.username || url.password) throw new OutboundBlockedError("credentials in the URL", url.host);
  // The URL parser already turned 2130706433, 0x7f.1, 0177.0.0.1 and 127.1 into 127.0.0.1;
  // parseHostLiteral repeats that reading for safety and unwraps IPv6 brackets.
  let literal: string | null;
  try {
    literal = parseHostLiteral(url.hostname);
  } catch {
    throw new OutboundBlockedError("invalid host", url.host);
  }
  if (literal !== null && isIP(literal) !== 0) {
    const verdict = isBlockedAddress(literal, policy);
    if (verdict.blocked) throw new OutboundBlockedError(verdict.reason ?? "address not allowed", url.host);
  }
  return url;
}

function findCause<T>(error: unknown, type: abstract new (...args: never[]) => T): T | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current; depth++) {
    if (current instanceof type) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

function errorCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string") return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

function codedError(message: string, code: string): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(message);
  error.code = code;
  return error;
}

/** Response headers with lower-case names: a repeated header is an array, any other a string. */
function responseHeaders(res: IncomingMessage): Record<string, string | string[]> {
  const out = new Map<string, string | string[]>();
  const raw = res.rawHeaders;
  // Name, value, name, value...
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const rawName = raw[i];
    const value = raw[i + 1];
    if (rawName === undefined || value === undefined) break; // i + 1 < length: both are there
    const name = rawName.toLowerCase();
    const previous = out.get(name);
    if (previous === undefined) out.set(name, value);
    else if (typeof previous === "string") out.set(name, [previous, value]);
    else previous.push(value);
  }
  return Object.fromEntries(out);
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const CREDENTIAL_HEADERS = new Set(["authorization", "cookie", "proxy-authorization"]);
const BODY_HEADERS = new Set(["content-type", "content-length", "content-encoding", "transfer-encoding"]);
/** Request headers that would change the framing or the connection: refused. */
const REFUSED_HEADERS = new Set(["transfer-encoding", "keep-alive", "upgrade", "expect"]);
/** Methods whose request carries a body (`content-length: 0` when there is none). */
const PAYLOAD_METHODS = new Set(["PUT", "POST", "PATCH", "QUERY", "PROPFIND", "PROPPATCH"]);
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * The headers sent: the caller's, without a `content-length` of its own (the body's length is
 * sent), and without headers that would change the message framing or the connection.
 */
function outgoingHeaders(
  headers: Record<string, string>,
  method: string,
  payload: Buffer | undefined,
): Record<string, string> {
  const out: Record<string, string> = {};
  let declaredLength: string | undefined;
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (REFUSED_HEADERS.has(lower)) throw codedError(`invalid ${lower} header`, "ERR_INVALID_ARG_VALUE");
    if (lower === "connection" && !value.split(",").every((token) => TOKEN.test(token.trim()))) {
      throw codedError("invalid connection header", "ERR_INVALID_ARG_VALUE");
    }
    if (lower === "content-length") {
      if (declaredLength !== undefined || !/^\d+$/.test(value)) {
        throw codedError("invalid content-length header", "ERR_INVALID_ARG_VALUE");
      }
      declaredLength = value;
      continue;
    }
    out[name] = value;
  }
  if (payload) {
    if (declaredLength !== undefined && Number(declaredLength) !== payload.length) {
      throw codedError("content-length does not match the body", "ERR_INVALID_ARG_VALUE");
    }
    out["content-length"] = String(payload.length);
  } else if (PAYLOAD_METHODS.has(method)) {
    out["content-length"] = "0";
  }
  return out;
}

/** Sends one request and resolves with the response head; the body is left to the caller. */
function exchange(
  url: URL,
  method: string,
  headers: Record<string, string>,
  payload: Buffer | undefined,
  policyAgents: PolicyAgents,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const https = url.protocol === "https:";
    const options = { method, headers, agent: https ? policyAgents.https : policyAgents.http, signal };
    let req: ClientRequest;
    try {
      req = https ? httpsRequest(url, options) : httpRequest(url, options);
    } catch (error) {
      reject(error);
      return;
    }
    // Stays attached: a request can still report an error after its response arrived.
    req.on("error", reject);
    req.once("response", resolve);
    req.once("socket", (socket) => {
      if (!socket.connecting) return; // a kept-alive connection
      const timer = setTimeout(
        () => req.destroy(codedError("connect timed out", "ETIMEDOUT")),
        CONNECT_TIMEOUT_MS,
      );
      const done = () => clearTimeout(timer);
      socket.once(https ? "secureConnect" : "connect", done);
      socket.once("close", done);
    });
    // Methods other than the payload methods send no content-length when there is no body.
    if (!payload && !PAYLOAD_METHODS.has(method)) req.useChunkedEncodingByDefault = false;
    req.end(payload);
  });
}

async function readBody(res: IncomingMessage, limit: number): Promise<{ body: Buffer; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res) {
    const buffer = chunk as Buffer;
    if (size + buffer.length > limit) {
      chunks.push(buffer.subarray(0, limit - size));
      size = limit;
      res.destroy();
      return { body: Buffer.concat(chunks, size), truncated: true };
    }
    chunks.push(buffer);
    size += buffer.length;
  }
  return { body: Buffer.concat(chunks, size), truncated: false };
}

/** The body decoded from its Content-Encoding (content-coding.ts, loaded on the first coded answer). */
async function decodedBody(
  read: { body: Buffer; truncated: boolean },
  headers: Record<string, string | string[]>,
  limit: number,
  url: URL,
): Promise<{ body: Buffer; truncated: boolean }> {
  if (headers["content-encoding"] === undefined) return read;
  const { ContentCodingError, decodeAnswer } = await contentCoding();
  try {
    return await decodeAnswer(read, headers, limit);
  } catch (error) {
    if (!(error instanceof ContentCodingError) || error.failure === "too-large") throw error;
    throw new OutboundDecodeError(url.host, error.failure, error.coding);
  }
}

/**
 * Sends one request under the outbound policy. Throws OutboundBlockedError, OutboundTimeoutError,
 * OutboundConnectError or OutboundDecodeError; any HTTP status is a response, not an error.
 */
export async function sendOutbound(request: OutboundRequest): Promise<OutboundResponse> {
  const policy = request.policy ?? outboundPolicyFromEnv();
  const policyAgents = agentsFor(policy);
  const exchanges = send(request, policy, policyAgents);
  policyAgents.active.add(exchanges);
  try {
    return await exchanges;
  } finally {
    policyAgents.active.delete(exchanges);
  }
}

async function send(
  request: OutboundRequest,
  policy: OutboundPolicy,
  policyAgents: PolicyAgents,
): Promise<OutboundResponse> {
  const timeoutMs = request.timeoutMs ?? DEFAULT_OUTBOUND_TIMEOUT_MS;
  const maxRedirects = request.maxRedirects ?? 0;
  const maxResponseBytes = request.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const startedAt = Date.now();

  let url = checkUrl(request.url, policy);
  let method = request.method.toUpperCase();
  let body = request.body;
  // The codings asked for are the ones decoded below, never what the gateway's own caller asked.
  let headers: Record<string, string> = Object.fromEntries(
    Object.entries(request.headers ?? {}).filter(([name]) => name.toLowerCase() !== "accept-encoding"),
  );
  headers["accept-encoding"] = ACCEPTED_CODINGS;

  const controller = new AbortController();
  let timedOut = false;
  let reading: IncomingMessage | undefined;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
    reading?.destroy(codedError("aborted", "ABORT_ERR"));
  }, timeoutMs);

  try {
    for (let hop = 0; ; hop++) {
      const payload =
        method === "GET" || method === "HEAD" || body === undefined || body.length === 0
          ? undefined
          : typeof body === "string"
            ? Buffer.from(body)
            : body;
      const response = await exchange(
        url,
        method,
        outgoingHeaders(headers, method, payload),
        payload,
        policyAgents,
        controller.signal,
      );
      response.on("error", () => undefined); // errors reach the reader; none may go unhandled
      reading = response;
      const headersAt = Date.now();
      const status = response.statusCode ?? 0;
      const responseHeadersOfHop = responseHeaders(response);
      const location = responseHeadersOfHop.location;

      if (REDIRECT_STATUSES.has(status) && hop < maxRedirects && typeof location === "string") {
        await readBody(response, 64 * 1024).catch(() => undefined);
        reading = undefined;
        if (timedOut) throw new OutboundTimeoutError(url.host, timeoutMs);
        let target: URL;
        try {
          target = new URL(location, url);
        } catch {
          throw new OutboundBlockedError("invalid redirect location", url.host);
        }
        const next = checkUrl(target, policy);
        // As fetch does: 303 turns anything but HEAD into GET, 301/302 turn POST into GET.
        const becomesGet =
          status === 303
            ? method !== "HEAD" && method !== "GET"
            : (status === 301 || status === 302) && method === "POST";
        if (becomesGet) {
          method = "GET";
          body = undefined;
          headers = Object.fromEntries(
            Object.entries(headers).filter(([name]) => !BODY_HEADERS.has(name.toLowerCase())),
          );
        }
        if (next.origin !== url.origin) {
          headers = Object.fromEntries(
            Object.entries(headers).filter(([name]) => !CREDENTIAL_HEADERS.has(name.toLowerCase())),
          );
        }
        url = next;
        continue;
      }

      const read = await readBody(response, maxResponseBytes);
      reading = undefined;
      const decoded = await decodedBody(read, responseHeadersOfHop, maxResponseBytes, url);
      return {
        status,
        headers: responseHeadersOfHop,
        body: decoded.body,
        truncated: decoded.truncated,
        timings: { startedAt, headersAt, endedAt: Date.now() },
        url: url.toString(),
      };
    }
  } catch (error) {
    const blocked = findCause(error, OutboundBlockedError);
    if (blocked) throw blocked;
    if (timedOut) throw new OutboundTimeoutError(url.host, timeoutMs);
    if (error instanceof OutboundError) throw error;
    throw new OutboundConnectError(url.host, errorCode(error), { cause: error });
  } finally {
    clearTimeout(timer);
  }
}
