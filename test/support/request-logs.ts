/**
 * Reading a proxy's request logs in e2e tests. The data plane writes a request's log after the
 * answer has been handed back (docs/data-plane.md), so a test that reads it right after the
 * answer must wait for it: these helpers poll the Core API, bounded.
 */
import { expect, vi } from "vitest";
import type { ApiClient } from "./stack.ts";

const WAIT = { timeout: 10_000, interval: 100 };

const requestsPath = (clientId: string, proxyId: string) =>
  `/api/clients/${clientId}/proxies/${proxyId}/requests`;

/** The listed record of one request, once it has been written. */
export function loggedRecord(api: ApiClient, clientId: string, proxyId: string, requestId: string) {
  return vi.waitFor(async () => {
    const result = await api.get(requestsPath(clientId, proxyId));
    expect(result.status, JSON.stringify(result.body)).toBe(200);
    const record = result.body.requests.find((r: { requestId: string }) => r.requestId === requestId);
    expect(record, `request log of ${requestId}`).toBeDefined();
    return record;
  }, WAIT);
}

/** The detailed record of one request (with bodies), once it has been written. */
export function loggedDetail(api: ApiClient, clientId: string, proxyId: string, requestId: string) {
  return vi.waitFor(async () => {
    const result = await api.get(`${requestsPath(clientId, proxyId)}/${requestId}`);
    expect(result.status, JSON.stringify(result.body)).toBe(200);
    expect(result.body.requests).toHaveLength(1);
    return result.body.requests[0];
  }, WAIT);
}

/** The proxy's listed records once there are `count` of them. */
export function loggedRecords(api: ApiClient, clientId: string, proxyId: string, count: number) {
  return vi.waitFor(
    async () => {
      const result = await api.get(requestsPath(clientId, proxyId));
      expect(result.status, JSON.stringify(result.body)).toBe(200);
      expect(result.body.requests).toHaveLength(count);
      return result.body.requests as Record<string, any>[];
    },
    { ...WAIT, timeout: 15_000 },
  );
}
