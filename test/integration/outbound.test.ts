/**
 * The outbound HTTP client (lib/net/outbound.ts) against real node:http servers on 127.0.0.1:
 * SSRF blocking before and at connect time, redirects, deadline, size limit, binary bodies.
 */
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { networkInterfaces } from "node:os";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { isBlockedAddress } from "#lib/net/address-policy.ts";
import {
  closeOutboundAgents,
  OutboundBlockedError,
  OutboundConnectError,
  OutboundDecodeError,
  OutboundTimeoutError,
  outboundPolicyFromEnv,
  sendOutbound,
} from "#lib/net/outbound.ts";
import { encodeBody } from "../support/content-codings.ts";

const LOOPBACK = { allowLoopback: true, allowPrivate: false };
const OPEN = { allowLoopback: true, allowPrivate: true };
const STRICT = { allowLoopback: false, allowPrivate: false };

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: Buffer;
}

/** A local non-loopback IPv4 address that is not always blocked (public or private), if any. */
const externalIPv4 = Object.values(networkInterfaces())
  .flat()
  .find(
    (nic) =>
      nic?.family === "IPv4" &&
      !nic.internal &&
      !isBlockedAddress(nic.address, { allowLoopback: false, allowPrivate: true }).blocked,
  )?.address;

const binary = randomBytes(300 * 1024);
const seen: Seen[] = [];
let connections = 0;
let server: Server;
let base: string;
let port: number;
const sockets = new Set<Socket>();

async function readAll(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function handle(req: IncomingMessage, res: ServerResponse) {
  const body = await readAll(req);
  seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
  const url = new URL(req.url ?? "/", "http://x");
  const redirect = (status: number, location: string) => {
    res.writeHead(status, { location });
    res.end("moved");
  };
  switch (url.pathname) {
    case "/hello":
      res.writeHead(200, { "content-type": "text/plain", "x-multi": ["a", "b"] });
      res.end("hello");
      return;
    case "/echo":
      res.writeHead(200, { "content-type": "application/octet-stream" });
      res.end(body);
      return;
    case "/binary":
      res.writeHead(200, { "content-type": "application/octet-stream" });
      res.end(binary);
      return;
    case "/big": {
      // 4 MiB written in 64 KiB chunks; the client stops early.
      res.writeHead(200, { "content-type": "application/octet-stream" });
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      let left = 64;
      const write = () => {
        while (left > 0) {
          left--;
          if (!res.write(chunk)) return void res.once("drain", write);
        }
        res.end();
      };
      res.on("error", () => undefined);
      write();
      return;
    }
    case "/exact":
      res.end(Buffer.alloc(1000, 0x62));
      return;
    case "/coded": {
      // The body encoded with `enc`, whatever was asked for; `size` bytes of "c" (default 2000).
      const codings = url.searchParams.get("enc") ?? "gzip";
      const plain = Buffer.alloc(Number(url.searchParams.get("size") ?? 2000), 0x63);
      const encoded = url.searchParams.has("corrupt")
        ? Buffer.from("not encoded")
        : encodeBody(codings, plain);
      res.writeHead(200, {
        "content-type": "text/plain",
        "content-encoding": codings,
        "content-length": encoded.length,
      });
      res.end(encoded);
      return;
    }
    case "/hang":
      return; // never answers
    case "/slow-body":
      res.writeHead(200, { "content-type": "text/plain" });
      res.write("partial");
      return; // never ends
    case "/redirect":
      return redirect(Number(url.searchParams.get("status") ?? 302), url.searchParams.get("to") ?? "/hello");
    case "/loop":
      return redirect(302, "/loop");
    default:
      res.writeHead(404);
      res.end();
  }
}

beforeAll(async () => {
  delete process.env.OUTBOUND_ALLOW_LOOPBACK;
  delete process.env.OUTBOUND_ALLOW_PRIVATE;
  server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  server.on("connection", (socket) => {
    connections++;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  await closeOutboundAgents();
  for (const socket of sockets) socket.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

beforeEach(() => {
  seen.length = 0;
  connections = 0;
});

async function blocked(promise: Promise<unknown>): Promise<OutboundBlockedError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(OutboundBlockedError);
  return error as OutboundBlockedError;
}

describe("policy", () => {
  it("defaults to blocking loopback and private addresses, relaxed only by explicit env", () => {
    expect(outboundPolicyFromEnv()).toEqual(STRICT);
    process.env.OUTBOUND_ALLOW_LOOPBACK = "true";
    process.env.OUTBOUND_ALLOW_PRIVATE = "1";
    try {
      expect(outboundPolicyFromEnv()).toEqual({ allowLoopback: true, allowPrivate: false });
    } finally {
      delete process.env.OUTBOUND_ALLOW_LOOPBACK;
      delete process.env.OUTBOUND_ALLOW_PRIVATE;
    }
  });

  it("blocks a loopback server by default; the server never sees a connection", async () => {
    const error = await blocked(sendOutbound({ method: "GET", url: `${base}/hello?apiKey=s3cr3t` }));
    expect(error.reason).toMatch(/loopback/);
    expect(error.message).toContain(`127.0.0.1:${port}`);
    expect(error.message).not.toContain("s3cr3t");
    expect(error.message).not.toContain("/hello");
    expect(connections).toBe(0);
    expect(seen).toHaveLength(0);
  });

  it("blocks loopback in other spellings of the address", async () => {
    for (const host of ["2130706433", "0x7f.1", "0177.0.0.1", "127.1", "[::ffff:127.0.0.1]", "[::1]"]) {
      await blocked(sendOutbound({ method: "GET", url: `http://${host}:${port}/hello`, policy: STRICT }));
    }
    expect(connections).toBe(0);
  });

  it("allows the loopback server with allowLoopback", async () => {
    const response = await sendOutbound({ method: "GET", url: `${base}/hello`, policy: LOOPBACK });
    expect(response.status).toBe(200);
    expect(response.body.toString()).toBe("hello");
    expect(response.truncated).toBe(false);
    expect(response.headers["content-type"]).toBe("text/plain");
    expect(response.headers["x-multi"]).toEqual(["a", "b"]);
    expect(response.url).toBe(`${base}/hello`);
    const { startedAt, headersAt, endedAt } = response.timings;
    expect(startedAt).toBeLessThanOrEqual(headersAt);
    expect(headersAt).toBeLessThanOrEqual(endedAt);
    expect(seen).toHaveLength(1);
  });

  it("also allows a decimal spelling of the loopback address with allowLoopback", async () => {
    const response = await sendOutbound({
      method: "GET",
      url: `http://2130706433:${port}/hello`,
      policy: LOOPBACK,
    });
    expect(response.status).toBe(200);
    expect(response.url).toBe(`${base}/hello`);
  });

  it("blocks a host name resolving to loopback at connect time", async () => {
    const error = await blocked(
      sendOutbound({ method: "GET", url: `http://localhost:${port}/hello`, policy: STRICT }),
    );
    expect(error.reason).toMatch(/loopback/);
    expect(error.reason).toMatch(/localhost resolves to/);
    expect(connections).toBe(0);
    // The same name passes once loopback is allowed: the check is on the resolved address.
    const response = await sendOutbound({
      method: "GET",
      url: `http://localhost:${port}/hello`,
      policy: LOOPBACK,
    });
    expect(response.status).toBe(200);
  });

  it("blocks the metadata address even with loopback and private allowed", async () => {
    const started = Date.now();
    const error = await blocked(
      sendOutbound({ method: "GET", url: "http://169.254.169.254/latest/meta-data/", policy: OPEN }),
    );
    expect(error.reason).toMatch(/metadata/);
    expect(Date.now() - started).toBeLessThan(1000);
    await blocked(
      sendOutbound({ method: "GET", url: "http://[fd00:ec2::254]/latest/meta-data/", policy: OPEN }),
    );
    await blocked(sendOutbound({ method: "GET", url: "http://0xa9fea9fe/", policy: OPEN }));
    await blocked(sendOutbound({ method: "GET", url: "http://[::ffff:169.254.169.254]/", policy: OPEN }));
  });

  it("blocks private addresses unless allowPrivate", async () => {
    const error = await blocked(sendOutbound({ method: "GET", url: "http://10.1.2.3/", policy: LOOPBACK }));
    expect(error.reason).toMatch(/private/);
  });

  it("accepts only http and https URLs", async () => {
    for (const url of ["file:///etc/passwd", "ftp://example.com/", "gopher://127.0.0.1:70/", "not a url"]) {
      await blocked(sendOutbound({ method: "GET", url, policy: OPEN }));
    }
  });
});

describe("redirects", () => {
  it("returns a 3xx response unchanged by default", async () => {
    const response = await sendOutbound({
      method: "GET",
      url: `${base}/redirect?to=http://169.254.169.254/`,
      policy: LOOPBACK,
    });
    expect(response.status).toBe(302);
    expect(response.headers.location).toBe("http://169.254.169.254/");
  });

  it("blocks a redirect to a blocked host", async () => {
    const metadata = await blocked(
      sendOutbound({
        method: "GET",
        url: `${base}/redirect?to=${encodeURIComponent("http://169.254.169.254/latest/meta-data/")}`,
        policy: OPEN,
        maxRedirects: 3,
      }),
    );
    expect(metadata.reason).toMatch(/metadata/);
    await blocked(
      sendOutbound({
        method: "GET",
        url: `${base}/redirect?to=${encodeURIComponent("http://10.0.0.1/")}`,
        policy: LOOPBACK,
        maxRedirects: 3,
      }),
    );
    await blocked(
      sendOutbound({
        method: "GET",
        url: `${base}/redirect?to=${encodeURIComponent("file:///etc/passwd")}`,
        policy: OPEN,
        maxRedirects: 3,
      }),
    );
  });

  // Needs a second, non-loopback address of this machine for the first hop (skipped without one).
  it.skipIf(!externalIPv4)(
    "blocks at connect time a redirect to a name that resolves to loopback",
    async () => {
      const redirector = createServer((_req, res) => {
        res.writeHead(302, { location: `http://localhost:${port}/hello` });
        res.end();
      });
      await new Promise<void>((resolve) => redirector.listen(0, externalIPv4, resolve));
      try {
        const first = `http://${externalIPv4}:${(redirector.address() as AddressInfo).port}/`;
        const error = await blocked(
          sendOutbound({
            method: "GET",
            url: first,
            policy: { allowLoopback: false, allowPrivate: true },
            maxRedirects: 2,
          }),
        );
        expect(error.reason).toMatch(/loopback.*localhost resolves to/);
        expect(seen).toHaveLength(0);
      } finally {
        redirector.closeAllConnections();
        await new Promise<void>((resolve) => redirector.close(() => resolve()));
      }
    },
  );

  it("follows redirects when allowed, up to maxRedirects", async () => {
    const response = await sendOutbound({
      method: "GET",
      url: `${base}/redirect?to=${encodeURIComponent("/redirect?to=/hello")}`,
      policy: LOOPBACK,
      maxRedirects: 2,
    });
    expect(response.status).toBe(200);
    expect(response.body.toString()).toBe("hello");
    expect(response.url).toBe(`${base}/hello`);
    expect(seen.map((s) => s.url)).toEqual([
      "/redirect?to=%2Fredirect%3Fto%3D%2Fhello",
      "/redirect?to=/hello",
      "/hello",
    ]);

    const loop = await sendOutbound({
      method: "GET",
      url: `${base}/loop`,
      policy: LOOPBACK,
      maxRedirects: 3,
    });
    expect(loop.status).toBe(302);
  });

  it("turns POST into GET on 303 and keeps method and body on 307", async () => {
    const after303 = await sendOutbound({
      method: "POST",
      url: `${base}/redirect?status=303&to=/echo`,
      headers: { "content-type": "text/plain" },
      body: "payload",
      policy: LOOPBACK,
      maxRedirects: 1,
    });
    expect(after303.status).toBe(200);
    expect(seen[1]).toMatchObject({ method: "GET", url: "/echo" });
    expect(seen[1]?.body.length).toBe(0);
    expect(seen[1]?.headers["content-type"]).toBeUndefined();

    seen.length = 0;
    const after307 = await sendOutbound({
      method: "POST",
      url: `${base}/redirect?status=307&to=/echo`,
      body: "payload",
      policy: LOOPBACK,
      maxRedirects: 1,
    });
    expect(after307.body.toString()).toBe("payload");
    expect(seen[1]).toMatchObject({ method: "POST", url: "/echo" });
  });

  it("drops credentials on a cross-origin redirect and keeps them on the same origin", async () => {
    await sendOutbound({
      method: "GET",
      url: `${base}/redirect?to=/hello`,
      headers: { authorization: "Bearer same-origin", "x-other": "1" },
      policy: LOOPBACK,
      maxRedirects: 1,
    });
    expect(seen[1]?.headers.authorization).toBe("Bearer same-origin");

    seen.length = 0;
    await sendOutbound({
      method: "GET",
      url: `${base}/redirect?to=${encodeURIComponent(`http://localhost:${port}/hello`)}`,
      headers: { authorization: "Bearer cross-origin", cookie: "a=b", "x-other": "1" },
      policy: LOOPBACK,
      maxRedirects: 1,
    });
    expect(seen[1]?.headers.authorization).toBeUndefined();
    expect(seen[1]?.headers.cookie).toBeUndefined();
    expect(seen[1]?.headers["x-other"]).toBe("1");
  });
});

describe("content codings", () => {
  it("asks for the codings it decodes, replacing the caller's own Accept-Encoding", async () => {
    await sendOutbound({
      method: "GET",
      url: `${base}/hello`,
      headers: { "Accept-Encoding": "compress" },
      policy: LOOPBACK,
    });
    expect(seen[0]!.headers["accept-encoding"]).toBe("gzip, deflate, br, zstd");
  });

  it.each(["gzip", "deflate", "br", "zstd", "gzip, br"])(
    "%s: the body is decoded and the coding headers removed",
    async (codings) => {
      const response = await sendOutbound({
        method: "GET",
        url: `${base}/coded?enc=${encodeURIComponent(codings)}`,
        policy: LOOPBACK,
      });
      expect(response.body.equals(Buffer.alloc(2000, 0x63))).toBe(true);
      expect(response.truncated).toBe(false);
      expect(response.headers["content-encoding"]).toBeUndefined();
      expect(response.headers["content-length"]).toBeUndefined();
      expect(response.headers["content-type"]).toBe("text/plain");
    },
  );

  it("a body over the limit once decoded is truncated and empty, never encoded bytes", async () => {
    const response = await sendOutbound({
      method: "GET",
      url: `${base}/coded?enc=gzip&size=100000`,
      maxResponseBytes: 50_000,
      policy: LOOPBACK,
    });
    expect(response.truncated).toBe(true);
    expect(response.body.length).toBe(0);
    expect(response.headers["content-encoding"]).toBeUndefined();
  });

  it("an encoded body cut by the limit is truncated and empty", async () => {
    const response = await sendOutbound({
      method: "GET",
      url: `${base}/coded?enc=gzip&size=100000`,
      maxResponseBytes: 10,
      policy: LOOPBACK,
    });
    expect(response.truncated).toBe(true);
    expect(response.body.length).toBe(0);
  });

  it("corrupt bytes and unknown codings are OutboundDecodeError naming the coding", async () => {
    const corrupt = await sendOutbound({
      method: "GET",
      url: `${base}/coded?enc=br&corrupt`,
      policy: LOOPBACK,
    }).catch((e: unknown) => e);
    expect(corrupt).toBeInstanceOf(OutboundDecodeError);
    expect(corrupt).toMatchObject({ failure: "corrupt", coding: "br" });
    const unknown = await sendOutbound({
      method: "GET",
      url: `${base}/coded?enc=compress&corrupt`,
      policy: LOOPBACK,
    }).catch((e: unknown) => e);
    expect(unknown).toMatchObject({ failure: "unsupported", coding: "compress" });
  });
});

describe("limits and bodies", () => {
  it("times out when no response arrives", async () => {
    const started = Date.now();
    const error = await sendOutbound({
      method: "GET",
      url: `${base}/hang`,
      policy: LOOPBACK,
      timeoutMs: 300,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutboundTimeoutError);
    expect((error as Error).message).toMatch(/timed out after 300 ms/);
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it("times out when the body stalls", async () => {
    const error = await sendOutbound({
      method: "GET",
      url: `${base}/slow-body`,
      policy: LOOPBACK,
      timeoutMs: 300,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutboundTimeoutError);
  });

  it("truncates at maxResponseBytes and stops reading", async () => {
    const response = await sendOutbound({
      method: "GET",
      url: `${base}/big`,
      policy: LOOPBACK,
      maxResponseBytes: 100_000,
    });
    expect(response.status).toBe(200);
    expect(response.truncated).toBe(true);
    expect(response.body.length).toBe(100_000);
    expect(response.body.equals(Buffer.alloc(100_000, 0x61))).toBe(true);

    const exact = await sendOutbound({
      method: "GET",
      url: `${base}/exact`,
      policy: LOOPBACK,
      maxResponseBytes: 1000,
    });
    expect(exact.truncated).toBe(false);
    expect(exact.body.length).toBe(1000);

    // The client still works after a destroyed stream.
    const after = await sendOutbound({ method: "GET", url: `${base}/hello`, policy: LOOPBACK });
    expect(after.body.toString()).toBe("hello");
  });

  it("returns a binary body byte-exact and sends one byte-exact", async () => {
    const response = await sendOutbound({ method: "GET", url: `${base}/binary`, policy: LOOPBACK });
    expect(response.body.equals(binary)).toBe(true);

    const upload = randomBytes(100 * 1024);
    const echoed = await sendOutbound({
      method: "PUT",
      url: `${base}/echo`,
      headers: { "content-type": "application/octet-stream" },
      body: upload,
      policy: LOOPBACK,
    });
    expect(echoed.body.equals(upload)).toBe(true);
    expect(seen[1]?.body.equals(upload)).toBe(true);
  });

  it("raises OutboundConnectError when the connection is refused", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const error = await sendOutbound({
      method: "GET",
      url: `http://127.0.0.1:${closedPort}/x?token=abc`,
      policy: LOOPBACK,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutboundConnectError);
    expect((error as OutboundConnectError).code).toBe("ECONNREFUSED");
    expect((error as Error).message).not.toContain("abc");
  });
});
