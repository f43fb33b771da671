/**
 * The bench's floor: a minimal Node reverse proxy (a keep-alive agent to the target, no auth, no
 * logging), in the bench process (bench/run.ts) and in a child of its own (bench/lambda-child.ts).
 */
import { Agent, createServer, request, type Server } from "node:http";

export function minimalProxy(targetUrl: string): Server {
  const target = new URL(targetUrl);
  const agent = new Agent({ keepAlive: true });
  return createServer((req, res) => {
    const upstream = request(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
        agent,
      },
      (response) => {
        res.writeHead(response.statusCode ?? 502, response.headers);
        response.pipe(res);
      },
    );
    upstream.on("error", () => {
      res.writeHead(502);
      res.end();
    });
    req.pipe(upstream);
  });
}
