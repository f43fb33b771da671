/**
 * The data plane's rate window and configuration check in one transaction (lib/data-plane/rate-window.ts),
 * against the emulator: counts, the limit, and a stale configuration version that cancels the count.
 */
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { getConfig } from "#lib/config.ts";
import { bumpConfigVersion } from "#lib/data-plane/client-runtime.ts";
import { consumeRateWindow } from "#lib/data-plane/rate-window.ts";
import { keys } from "#lib/db/keys.ts";
import { rateWindowAt } from "#lib/domain/rate-limit.ts";
import { provisionTable } from "#local/provision.ts";
import { storedItem } from "../support/stack.ts";

const REGION = "eu-west-1";
// Well inside a minute, so every call of a test counts in one window.
const NOW = rateWindowAt(Date.now()).start + 10_000;

beforeAll(async () => {
  await provisionTable(REGION, getConfig().tableName);
});

const counterOf = async (credentialId: string) =>
  (await storedItem(keys.rateWindow(`CRED#${credentialId}`, rateWindowAt(NOW).start), REGION))?.requestCount;

describe("consumeRateWindow", () => {
  it("counts requests up to the limit, then refuses with the seconds left in the window", async () => {
    const clientId = randomUUID();
    const credentialId = randomUUID();
    await bumpConfigVersion(REGION, clientId);
    const runtime = { clientId, version: 1 };
    for (let i = 0; i < 3; i++) {
      expect(await consumeRateWindow(REGION, runtime, credentialId, 3, NOW)).toMatchObject({ allowed: true });
    }
    expect(await consumeRateWindow(REGION, runtime, credentialId, 3, NOW)).toEqual({
      allowed: false,
      limit: 3,
      remaining: 0,
      retryAfterSeconds: 50,
    });
    expect(await counterOf(credentialId)).toBe(3);
  });

  it("answers stale, and counts nothing, when the configuration changed since admission", async () => {
    const clientId = randomUUID();
    const credentialId = randomUUID();
    await bumpConfigVersion(REGION, clientId);
    await bumpConfigVersion(REGION, clientId);
    expect(await consumeRateWindow(REGION, { clientId, version: 1 }, credentialId, 10, NOW)).toBe("stale");
    expect(await counterOf(credentialId)).toBeUndefined();
    expect(await consumeRateWindow(REGION, { clientId, version: 2 }, credentialId, 10, NOW)).toMatchObject({
      allowed: true,
    });
    expect(await counterOf(credentialId)).toBe(1);
  });

  it("treats version 0 as a client without a runtime item yet, and is exact under concurrency", async () => {
    const clientId = randomUUID();
    const credentialId = randomUUID();
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        consumeRateWindow(REGION, { clientId, version: 0 }, credentialId, 12, NOW),
      ),
    );
    expect(results.filter((r) => r !== "stale" && r.allowed)).toHaveLength(12);
    expect(await counterOf(credentialId)).toBe(12);
  });
});
