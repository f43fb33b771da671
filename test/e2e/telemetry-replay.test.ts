/**
 * The replay test of issue 11 over real HTTP: the local stack delivers every stream batch three
 * times (`streamRedeliveries: 2`, Lambda's at-least-once delivery made systematic), and the
 * telemetry read through the API still counts each request exactly once.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  callDataPlane,
  createClientFor,
  created,
  createProxyParts,
  startTestStack,
  type TestStack,
  type TestUser,
} from "#test/support/stack.ts";

const REGION = "us-east-1";
const KEY = "replay-caller-key-1234567890";

let stack: TestStack;
let owner: TestUser;
let clientId: string;
let proxyId: string;
let target: Server;

beforeAll(async () => {
  target = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const failing = req.url?.startsWith("/fail");
      res.writeHead(failing ? 500 : 200, { "content-type": "application/json" });
      res.end(failing ? '{"error":"boom"}' : '{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
  stack = await startTestStack({ streams: true, streamRedeliveries: 2 });
  owner = await stack.newUser();
  clientId = await createClientFor(owner, "Replayed");
  const parts = await createProxyParts(owner, clientId, {
    region: REGION,
    key: KEY,
    targetBaseURL: `http://127.0.0.1:${(target.address() as AddressInfo).port}`,
  });
  const proxy = await created(
    owner.api.post(`/api/clients/${clientId}/proxies`, {
      proxyName: "replayed",
      proxyRegion: REGION,
      proxyProxyCredentialId: parts.proxyCredentialId,
      proxyTargetId: parts.targetId,
      proxyTargetCredentialId: parts.targetCredentialId,
    }),
    "proxies",
  );
  proxyId = proxy.proxyId as string;
});

afterAll(async () => {
  await stack?.stop();
  target?.closeAllConnections();
  await new Promise((resolve) => target?.close(resolve));
});

describe("telemetry with every stream batch delivered three times", () => {
  it("counts each request once, read through the client and proxy routes", async () => {
    const plan = [
      ...Array.from({ length: 6 }, () => ({ path: "/ok", key: KEY, status: 200 })),
      { path: "/fail", key: KEY, status: 500 },
      { path: "/fail", key: KEY, status: 500 },
      { path: "/ok", key: "wrong-key-000000000000000000", status: 403 },
    ];
    for (const step of plan) {
      const answer = await callDataPlane(`${stack.regions[REGION]}/api/${proxyId}${step.path}`, {
        headers: { "x-api-key": step.key },
      });
      expect(answer.status).toBe(step.status);
    }
    await stack.streams?.drain();
    // Nothing more arrives after the drain: a second drain delivers nothing new.
    await stack.streams?.drain();
    for (const path of [
      `/api/clients/${clientId}/telemetry?interval=day`,
      `/api/clients/${clientId}/proxies/${proxyId}/telemetry?interval=minute&limit=1000`,
    ]) {
      const answer = await owner.api.get(path);
      expect(answer.status).toBe(200);
      const records = answer.body.telemetry as {
        countMap: Record<string, number>;
        codeCountMap: Record<string, number>;
      }[];
      const sum = (pick: (record: (typeof records)[number]) => number | undefined) =>
        records.reduce((total, record) => total + (pick(record) ?? 0), 0);
      expect(
        sum((r) => r.countMap.proxy),
        path,
      ).toBe(9);
      expect(
        sum((r) => r.countMap.target),
        path,
      ).toBe(8);
      expect(
        sum((r) => r.codeCountMap["200:proxy"]),
        path,
      ).toBe(6);
      expect(
        sum((r) => r.codeCountMap["500:target"]),
        path,
      ).toBe(2);
      expect(
        sum((r) => r.codeCountMap["403:proxy"]),
        path,
      ).toBe(1);
    }
  }, 120_000);
});
