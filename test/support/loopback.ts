/** Loopback HTTP servers for e2e tests: targets and token endpoints that read the whole body first. */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export type BodyHandler = (req: IncomingMessage, body: Buffer, res: ServerResponse) => void;

/** A server on 127.0.0.1 calling `handler` with the request's whole body; kept in `servers`; its base URL. */
export async function listenWithBody(handler: BodyHandler, servers: Server[]): Promise<string> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => handler(req, Buffer.concat(chunks), res));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/**
 * A customToken endpoint on loopback: every call hands out a new token (`<prefix>-<uuid>`, added to
 * `issued`) as `{data: {token, expires_in: 3600}}`; its base URL.
 */
export function listenTokenEndpoint(
  servers: Server[],
  issued: Set<string>,
  prefix = "custom-token",
): Promise<string> {
  return listenWithBody((_req, _body, res) => {
    const token = `${prefix}-${randomUUID()}`;
    issued.add(token);
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ data: { token, expires_in: 3600 } }));
  }, servers);
}
