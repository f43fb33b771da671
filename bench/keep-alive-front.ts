/**
 * A keep-alive front for the emulator, in a child process: the gateway's SDK clients talk to it
 * over connections it keeps open, and it forwards each call to moto (which answers every call with
 * `Connection: close`). In AWS the SDK's keep-alive agent reuses its connections to DynamoDB, so
 * the TCP connect per store call that moto forces on the gateway is an emulator artefact; with the
 * front, that cost is paid by the child process, which `process.cpuUsage()` of the bench does not
 * count. Plain HTTP: the TLS record cost of a real endpoint (small beside the SDK's own, with
 * connections reused) is not in the figure.
 *
 * It also logs every call it forwards (X-Amz-Target, arrival time in µs on CLOCK_MONOTONIC, the
 * clock the bundled-handler child marks its invocations with): `calls()` returns and clears the log.
 */
import { fork } from "node:child_process";
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { operationOf, type StoreCall } from "./function-url-front.ts";

const FRONT = `import { createServer, request } from "node:http";
const upstream = new URL(process.argv[2]);
const calls = [];
const server = createServer((req, res) => {
  calls.push([req.headers["x-amz-target"] ?? "", req.method, Number(process.hrtime.bigint() / 1000n)]);
  const chunks = [];
  req.on("data", (chunk) => chunks.push(chunk));
  req.on("end", () => {
    const out = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      const headers = { ...answer.headers };
      delete headers.connection;
      res.writeHead(answer.statusCode ?? 502, headers);
      answer.pipe(res);
    });
    out.on("error", () => { res.writeHead(502); res.end(); });
    out.end(Buffer.concat(chunks));
  });
});
server.keepAliveTimeout = 60000;
process.on("message", (message) => { if (message === "calls") process.send({ calls: calls.splice(0) }); });
server.listen(0, "127.0.0.1", () => process.send(server.address().port));`;

export interface KeepAliveFront {
  endpoint: string;
  /** The calls forwarded since the last ask (operation, arrival µs), and the log cleared. */
  calls(): Promise<StoreCall[]>;
  stop(): void;
}

export async function startKeepAliveFront(upstream: string): Promise<KeepAliveFront> {
  const file = join(tmpdir(), `keep-alive-front-${process.pid}.mjs`);
  writeFileSync(file, FRONT);
  const child = fork(file, [upstream], { stdio: ["ignore", "ignore", "inherit", "ipc"] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once("message", (message) => resolve(Number(message)));
    child.once("exit", (code) => reject(new Error(`keep-alive front exited with code ${code}`)));
  });
  const calls = () =>
    new Promise<StoreCall[]>((resolve) => {
      const listen = (message: { calls?: [string, string, number][] }) => {
        if (!message.calls) return;
        child.off("message", listen);
        resolve(message.calls.map(([target, method, at]) => [operationOf(target, method), at]));
      };
      child.on("message", listen);
      child.send("calls");
    });
  return { endpoint: `http://127.0.0.1:${port}`, calls, stop: () => child.kill() };
}
