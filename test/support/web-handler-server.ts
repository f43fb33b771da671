/**
 * Serve a web-standard handler (`Request` -> `Response`, or undefined for "not mine": 404) on a
 * loopback Node HTTP server: the adapter Node request -> web Request -> Node response. The base
 * URL is the server's own origin, so handlers that derive URLs from `request.url` see it.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** What the server knows of the connection: the caller's address, as a function URL's `sourceIp`. */
export interface WebRequestInfo {
  remoteAddress: string;
}

export type WebHandler = (request: Request, info: WebRequestInfo) => Promise<Response | undefined>;

export interface WebHandlerServer {
  baseUrl: string;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** A Node request as a web Request addressed to `baseUrl`. */
export async function webRequestOf(req: IncomingMessage, baseUrl: string): Promise<Request> {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  const method = req.method ?? "GET";
  const body = method === "GET" || method === "HEAD" ? undefined : await readBody(req);
  return new Request(new URL(req.url ?? "/", baseUrl), { method, headers, body, redirect: "manual" });
}

/** A web Response written to a Node response (every Set-Cookie kept). */
export async function writeWebResponse(response: Response, res: ServerResponse): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    if (name !== "set-cookie") headers[name] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length) headers["set-cookie"] = cookies;
  const body = Buffer.from(await response.arrayBuffer());
  res.writeHead(response.status, headers);
  res.end(body);
}

export async function serveWebHandler(handler: WebHandler, host = "127.0.0.1"): Promise<WebHandlerServer> {
  let baseUrl = "";
  const server = createServer((req, res) => {
    void (async () => {
      try {
        const remoteAddress = (req.socket.remoteAddress ?? "127.0.0.1").replace(/^::ffff:/, "");
        const response =
          (await handler(await webRequestOf(req, baseUrl), { remoteAddress })) ??
          new Response("Not found", { status: 404 });
        await writeWebResponse(response, res);
      } catch (error) {
        res.writeHead(500, { "Content-Type": "text/plain" });
        res.end(`handler threw: ${String(error)}`);
      }
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  baseUrl = `http://${host}:${(server.address() as AddressInfo).port}`;
  return {
    baseUrl,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
