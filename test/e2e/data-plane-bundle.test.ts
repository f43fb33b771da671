/**
 * The bundled data plane (cdk/bundle.ts buildSplitBundle: `index.mjs` and its chunks, as Lambda
 * gets it) serving real requests in a child `node` process against the emulator: the modules the
 * bundle swaps (the credential provider, the endpoint cache, SHA-256 and CRC-32: cdk/bundle.ts
 * DATA_PLANE_ALIASES) and the code it loads on demand (the secret envelope and KMS when the
 * configuration is loaded, the rule evaluator for a proxy with rules, the request log after the
 * answer) must do in the bundle what the source does. test/unit/data-plane-bundle.test.ts holds
 * the size and what stays out of the cold start.
 */
import { execFile } from "node:child_process";
import { rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BundleFigures, buildDataPlaneBundle } from "../../bench/bundle-report.ts";
import { loggedRecord } from "../support/request-logs.ts";
import {
  createClientFor,
  createProxyOf,
  createProxyParts,
  startTestStack,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const US = "us-east-1";
const CALLER_KEY = "bundle-caller-key";
const TARGET_KEY = "bundle-target-key";

let stack: TestStack;
let owner: TestUser;
let clientId: string;
let figures: BundleFigures;
let target: Server;
let targetBase: string;
const received: { method: string; url: string; headers: IncomingMessage["headers"] }[] = [];

beforeAll(async () => {
  figures = await buildDataPlaneBundle();
  stack = await startTestStack();
  owner = await stack.newUser();
  clientId = await createClientFor(owner);
  target = createServer((req, res) => {
    received.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers });
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ ok: true, path: req.url }));
    });
  });
  await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
  targetBase = `http://127.0.0.1:${(target.address() as AddressInfo).port}/base`;
});

afterAll(async () => {
  target?.closeAllConnections();
  await new Promise((resolve) => target?.close(resolve));
  await stack?.stop();
  if (figures) rmSync(figures.outdir, { recursive: true, force: true });
});

interface BundleAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Imports the bundle's handler in a new `node` process (this file's emulator environment, loopback
 * targets allowed) and sends it `calls` one after the other, as Lambda's function URL would.
 */
async function callBundle(
  calls: { method: string; path: string; headers: Record<string, string> }[],
): Promise<BundleAnswer[]> {
  const script = `
const { handler } = await import(${JSON.stringify(pathToFileURL(figures.entryFile).href)});
const answers = [];
for (const call of ${JSON.stringify(calls)}) {
  const result = await handler({
    version: "2.0", routeKey: "$default", rawPath: call.path, rawQueryString: "", headers: call.headers,
    isBase64Encoded: false,
    requestContext: {
      accountId: "000000000000", apiId: "bundle", domainName: "bundle.test", domainPrefix: "bundle",
      http: { method: call.method, path: call.path, protocol: "HTTP/1.1", sourceIp: "203.0.113.7", userAgent: "bundle-test" },
      requestId: "r", routeKey: "$default", stage: "$default", time: "", timeEpoch: Date.now(),
    },
  });
  answers.push({ status: result.statusCode, headers: result.headers, body: Buffer.from(result.body, "base64").toString("utf8") });
}
process.stdout.write("\\n" + JSON.stringify(answers) + "\\n");
process.exit(0);`;
  // Asynchronous: the target and the local stack answer from this process meanwhile.
  const child = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    const running = execFile(
      process.execPath,
      ["--input-type=module", "-e", script],
      {
        cwd: tmpdir(),
        encoding: "utf8",
        timeout: 60_000,
        env: {
          ...process.env,
          OUTBOUND_ALLOW_LOOPBACK: "true",
          LOG_LEVEL: "error",
        },
      },
      (_error, stdout, stderr) => resolve({ status: running.exitCode, stdout, stderr }),
    );
  });
  expect(child.stderr).toBe("");
  expect(child.status).toBe(0);
  // The answers are the last line (the gateway's log lines go to stdout as well).
  return JSON.parse(child.stdout.trim().split("\n").at(-1)!) as BundleAnswer[];
}

describe("the bundled data plane against the emulator", () => {
  it("forwards with the decrypted target credential, applies a rule and writes the request log", async () => {
    const parts = await createProxyParts(owner, clientId, {
      region: US,
      key: CALLER_KEY,
      targetBaseURL: targetBase,
      targetCredential: { authType: "apiKey", secret: { keyName: "x-target-key", keyValue: TARGET_KEY } },
    });
    const plain = await createProxyOf(owner, clientId, US, parts);
    const ruled = await createProxyOf(owner, clientId, US, parts);
    const rule = await owner.api.post(`/api/clients/${clientId}/proxies/${ruled}/rules`, {
      effect: "deny",
      priority: 100,
      methods: ["DELETE"],
    });
    expect(rule.status, JSON.stringify(rule.body)).toBe(201);

    const headers = { "x-api-key": CALLER_KEY };
    const answers = await callBundle([
      { method: "GET", path: `/api/${plain}/items/1`, headers },
      { method: "GET", path: `/api/${plain}/items/2`, headers: { "x-api-key": "wrong" } },
      { method: "GET", path: `/api/${ruled}/items/3`, headers },
      { method: "DELETE", path: `/api/${ruled}/items/4`, headers },
      { method: "GET", path: "/api/pxy_unknown/items", headers },
    ]);
    expect(answers.map((answer) => answer.status)).toEqual([200, 403, 200, 403, 403]);
    expect(JSON.parse(answers[0]!.body)).toEqual({ ok: true, path: "/base/items/1" });
    expect(JSON.parse(answers[1]!.body)).toEqual({
      code: "proxy-access-denied",
      message: "Invalid proxy credential",
    });
    expect(JSON.parse(answers[3]!.body).message).toMatch(
      /^Access denied by an access rule: denied by rule .* of the proxy$/,
    );
    expect(JSON.parse(answers[4]!.body)).toEqual({ code: "proxy-access-denied", message: "Unknown proxy" });
    // The target saw the two forwarded requests, each with the target credential (decrypted with
    // KMS in the bundle) and never the caller's.
    expect(received.map((request) => [request.method, request.url])).toEqual([
      ["GET", "/base/items/1"],
      ["GET", "/base/items/3"],
    ]);
    for (const request of received) {
      expect(request.headers["x-target-key"]).toBe(TARGET_KEY);
      expect(request.headers["x-api-key"]).toBeUndefined();
    }
    // The request log, written after each answer by the on-demand log stage.
    const logged = await loggedRecord(owner.api, clientId, ruled, answers[3]!.headers["x-request-id"]!);
    expect(logged).toMatchObject({
      processed: false,
      proxyData: {
        method: "DELETE",
        apiPath: "/items/4",
        code: "proxy-access-granted",
        apiHeaders: { "x-api-key": "[redacted]" },
      },
    });
    await loggedRecord(owner.api, clientId, plain, answers[0]!.headers["x-request-id"]!);
  });
});
