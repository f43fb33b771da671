/**
 * The counter primitive (lib/data-plane/counters.ts) against the emulator: counts up to a limit,
 * refuses by step name, cancels everything on a stale configuration version, is exact under
 * concurrency, and is idempotent under a retry with the same ClientRequestToken, including a
 * real retry of the AWS SDK after the answer of a committed transaction was lost on the wire.
 */
import { randomUUID } from "node:crypto";
import { createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { beforeAll, describe, expect, it } from "vitest";
import { resetClients } from "#lib/aws/clients.ts";
import { getConfig } from "#lib/config.ts";
import { bumpConfigVersion } from "#lib/data-plane/client-runtime.ts";
import {
  type CounterStep,
  clientRequestToken,
  commitCounters,
  counterKeys,
} from "#lib/data-plane/counters.ts";
import { windowAt } from "#lib/domain/meters/windows.ts";
import { provisionTable } from "#local/provision.ts";
import { storedItem } from "../support/stack.ts";

const REGION = "eu-west-1";
const NOW = windowAt("minute", Date.now()).start + 10_000;

beforeAll(async () => {
  await provisionTable(REGION, getConfig().tableName);
});

function step(
  name: string,
  meterId: string,
  limit: number | undefined,
  mode: "add" | "check" = "add",
): CounterStep {
  const window = windowAt("minute", NOW);
  return {
    name,
    key: counterKeys.meter(meterId, undefined, window),
    window,
    owner: { entity: "meterCounter", clientId: "c", proxyId: "p", counterOf: meterId },
    mode,
    amount: mode === "add" ? 1 : 0,
    ...(limit !== undefined ? { limit } : {}),
  };
}

const storedValue = async (meterId: string) =>
  (await storedItem(counterKeys.meter(meterId, undefined, windowAt("minute", NOW)), REGION))?.value;

describe("commitCounters", () => {
  it("counts every step up to its limit, then refuses by name and counts nothing", async () => {
    const [a, b] = [randomUUID(), randomUUID()];
    for (let i = 0; i < 2; i++) {
      const decision = await commitCounters(REGION, [step("a", a, 2), step("b", b, 5)], {
        token: randomUUID(),
      });
      expect(decision).toEqual({ outcome: "counted" });
    }
    const refused = await commitCounters(REGION, [step("a", a, 2), step("b", b, 5)], { token: randomUUID() });
    expect(refused).toEqual({ outcome: "refused", refused: ["a"] });
    expect(await storedValue(a)).toBe(2);
    expect(await storedValue(b)).toBe(2); // the refused transaction counted nothing in b either
    const item = await storedItem(counterKeys.meter(a, undefined, windowAt("minute", NOW)), REGION);
    expect(item).toMatchObject({
      entity: "meterCounter",
      meterId: a,
      window: "minute",
      windowStart: windowAt("minute", NOW).start,
      windowEnd: windowAt("minute", NOW).end,
    });
    expect(item?.TTL).toBe(Math.ceil(windowAt("minute", NOW).end / 1000) + 3600);
  });

  it("a check step refuses once the value has reached the limit, without adding", async () => {
    const meterId = randomUUID();
    const window = windowAt("minute", NOW);
    const add: CounterStep = { ...step("add", meterId, undefined), amount: 7 };
    await commitCounters(REGION, [add], { token: randomUUID() });
    expect(
      await commitCounters(REGION, [step("check", meterId, 8, "check")], { token: randomUUID() }),
    ).toEqual({
      outcome: "counted",
    });
    await commitCounters(REGION, [{ ...add, amount: 1 }], { token: randomUUID() });
    expect(
      await commitCounters(REGION, [step("check", meterId, 8, "check")], { token: randomUUID() }),
    ).toEqual({
      outcome: "refused",
      refused: ["check"],
    });
    expect(window.kind).toBe("minute");
    expect(await storedValue(meterId)).toBe(8);
  });

  it("answers stale, counting nothing, when the configuration changed since admission", async () => {
    const clientId = randomUUID();
    const meterId = randomUUID();
    await bumpConfigVersion(REGION, clientId);
    await bumpConfigVersion(REGION, clientId);
    expect(
      await commitCounters(REGION, [step("m", meterId, 10)], {
        version: { clientId, version: 1 },
        token: randomUUID(),
      }),
    ).toEqual({ outcome: "stale" });
    expect(await storedValue(meterId)).toBeUndefined();
    expect(
      await commitCounters(REGION, [step("m", meterId, 10)], {
        version: { clientId, version: 2 },
        token: randomUUID(),
      }),
    ).toEqual({ outcome: "counted" });
    expect(await storedValue(meterId)).toBe(1);
  });

  it("is exact under concurrency: 40 parallel transactions at limit 12 count exactly 12", async () => {
    const clientId = randomUUID();
    const meterId = randomUUID();
    const results = await Promise.all(
      Array.from({ length: 40 }, () =>
        commitCounters(REGION, [step("m", meterId, 12)], {
          version: { clientId, version: 0 },
          token: randomUUID(),
        }),
      ),
    );
    expect(results.filter((r) => r.outcome === "counted")).toHaveLength(12);
    expect(await storedValue(meterId)).toBe(12);
  });

  it("a retry with the same ClientRequestToken (an SDK retry after a lost answer) counts once", async () => {
    const meterId = randomUUID();
    const token = clientRequestToken(randomUUID(), "count:1");
    expect(token).toHaveLength(36);
    for (let i = 0; i < 3; i++) {
      expect(await commitCounters(REGION, [step("m", meterId, 10)], { token })).toEqual({
        outcome: "counted",
      });
    }
    expect(await storedValue(meterId)).toBe(1);
  });
});

/** What a lossy front saw: each TransactWriteItems attempt and the token it carried. */
interface FrontLog {
  attempts: { token: string | undefined; answered: boolean }[];
}

/**
 * Run `body` with the SDK talking to the emulator through a front on loopback that passes every
 * call on, except the FIRST TransactWriteItems: that one is passed to the emulator, which applies
 * it, and then the caller's socket is destroyed instead of returning the answer (a committed
 * transaction whose answer is lost). The SDK sees a reset connection, a retryable error, and sends
 * the same request again. `stripToken` removes ClientRequestToken from every transaction on its
 * way through (what the retry would do without one).
 */
async function throughLossyFront<T>(
  options: { stripToken: boolean },
  body: (log: FrontLog) => Promise<T>,
): Promise<T> {
  const emulator = process.env.AWS_ENDPOINT_URL!;
  const log: FrontLog = { attempts: [] };
  const front = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      let payload = Buffer.concat(chunks);
      const headers = { ...req.headers };
      const transaction = req.headers["x-amz-target"] === "DynamoDB_20120810.TransactWriteItems";
      let drop = false;
      if (transaction) {
        const parsed = JSON.parse(payload.toString("utf8")) as { ClientRequestToken?: string };
        drop = log.attempts.length === 0;
        log.attempts.push({ token: parsed.ClientRequestToken, answered: !drop });
        if (options.stripToken) {
          delete parsed.ClientRequestToken;
          payload = Buffer.from(JSON.stringify(parsed));
          headers["content-length"] = String(payload.length);
        }
      }
      const upstream = httpRequest(
        new URL(req.url ?? "/", emulator),
        { method: req.method, headers },
        (answer) => {
          const answerChunks: Buffer[] = [];
          answer.on("data", (chunk: Buffer) => answerChunks.push(chunk));
          answer.on("end", () => {
            // The emulator has answered, so the transaction is applied: lose the answer.
            if (drop) return req.socket.destroy();
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            res.end(Buffer.concat(answerChunks));
          });
        },
      );
      upstream.on("error", () => res.destroy());
      upstream.end(payload);
    });
  });
  await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
  process.env.AWS_ENDPOINT_URL = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
  resetClients();
  try {
    return await body(log);
  } finally {
    process.env.AWS_ENDPOINT_URL = emulator;
    resetClients();
    front.closeAllConnections();
    await new Promise((resolve) => front.close(resolve));
  }
}

describe("commitCounters under a real SDK retry", () => {
  it("a committed transaction whose answer was lost is retried by the SDK with the same token: counted once", async () => {
    const meterId = randomUUID();
    const token = clientRequestToken(randomUUID(), "count:1");
    const { decision, log } = await throughLossyFront({ stripToken: false }, async (log) => ({
      decision: await commitCounters(REGION, [step("m", meterId, 10)], { token }),
      log,
    }));
    expect(decision).toEqual({ outcome: "counted" });
    // Two attempts reached the emulator (the first applied, its answer lost), with one token.
    expect(log.attempts).toEqual([
      { token, answered: false },
      { token, answered: true },
    ]);
    expect(await storedValue(meterId)).toBe(1);
    // The token is what made the retry a no-op: another transaction (another token) counts again.
    expect(await commitCounters(REGION, [step("m", meterId, 10)], { token: randomUUID() })).toEqual({
      outcome: "counted",
    });
    expect(await storedValue(meterId)).toBe(2);
  });

  it("the same retry without a ClientRequestToken counts the request twice", async () => {
    const meterId = randomUUID();
    const { decision, log } = await throughLossyFront({ stripToken: true }, async (log) => ({
      decision: await commitCounters(REGION, [step("m", meterId, 10)], {
        token: clientRequestToken(randomUUID(), "count:1"),
      }),
      log,
    }));
    expect(decision).toEqual({ outcome: "counted" });
    expect(log.attempts).toHaveLength(2);
    expect(await storedValue(meterId)).toBe(2);
  });
});
