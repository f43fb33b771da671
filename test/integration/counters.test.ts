/**
 * The counter primitive (lib/data-plane/counters.ts) against the emulator: counts up to a limit,
 * refuses by step name, cancels everything on a stale configuration version, is exact under
 * concurrency, and is idempotent under a retry with the same ClientRequestToken, including a
 * real retry of the AWS SDK after the answer of a committed transaction was lost on the wire.
 */
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { getConfig } from "#lib/config.ts";
import {
  type CounterStep,
  clientRequestToken,
  commitCounters,
  counterKeys,
} from "#lib/data-plane/counters.ts";
import { configVersionStep, writeSteps } from "#lib/db/commit.ts";
import { windowAt } from "#lib/shared/meter-windows.ts";
import { provisionTable } from "#local/provision.ts";
import { routeThrough, startLossyFront, type TransactionAttempt } from "../support/lossy-front.ts";
import { storedItem } from "../support/stack.ts";

const REGION = "eu-west-1";
const NOW = windowAt("minute", Date.now()).start + 10_000;

beforeAll(async () => {
  await provisionTable(REGION, getConfig().tableName);
});

function step(name: string, meterId: string, limit: number | undefined): CounterStep {
  const window = windowAt("minute", NOW);
  return {
    name,
    key: counterKeys.meter(meterId, undefined, window),
    window,
    owner: { entity: "meterCounter", clientId: "c", proxyId: "p", counterOf: meterId },
    mode: "add",
    amount: 1,
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

  it("a reserve step holds room in `charged` until its settlement replaces it with the real value; refused once the value or the reservations reach the limit", async () => {
    const meterId = randomUUID();
    const reserve = (amount: number, window = windowAt("minute", NOW)): CounterStep => ({
      ...step("reserve", meterId, 100),
      key: counterKeys.meter(meterId, undefined, window),
      window,
      mode: "reserve",
      amount,
    });
    const settle = (amount: number, reserved: number): CounterStep => ({
      ...step("settle", meterId, undefined),
      amount,
      reserved,
    });
    const item = () => storedItem(counterKeys.meter(meterId, undefined, windowAt("minute", NOW)), REGION);
    const commit = (steps: CounterStep[]) => commitCounters(REGION, steps, { token: randomUUID() });
    // 0, 40, 80 are below 100: three reservations of 40 are admitted (the third crosses), a fourth not.
    for (let i = 0; i < 3; i++) expect(await commit([reserve(40)])).toEqual({ outcome: "counted" });
    expect(await commit([reserve(40)])).toEqual({ outcome: "refused", refused: ["reserve"] });
    expect(await item()).toMatchObject({ charged: 120, inflight: 3, entity: "meterCounter", meterId });
    expect((await item())?.value).toBeUndefined();
    // Two answers worth 10 and one failed request (0): the reservations are replaced by the values.
    await commit([settle(10, 40)]);
    await commit([settle(10, 40)]);
    expect(await item()).toMatchObject({ value: 20, charged: 60, inflight: 1 });
    expect(await commit([reserve(40)])).toEqual({ outcome: "counted" });
    await commit([settle(0, 40)]);
    await commit([settle(0, 40)]);
    expect(await item()).toMatchObject({ value: 20, charged: 20, inflight: 0 });
    // A reservation never settled (a crash) holds its room only until its window ends.
    expect(await commit([reserve(100)])).toEqual({ outcome: "counted" });
    expect(await commit([reserve(1)])).toEqual({ outcome: "refused", refused: ["reserve"] });
    expect(await commit([reserve(1, windowAt("minute", NOW + 60_000))])).toEqual({ outcome: "counted" });
  });

  it("a reserve step refuses on a value at the limit written before reservations existed (no `charged`)", async () => {
    const meterId = randomUUID();
    await commitCounters(REGION, [{ ...step("add", meterId, undefined), amount: 100 }], {
      token: randomUUID(),
    });
    expect(
      await commitCounters(REGION, [{ ...step("reserve", meterId, 100), mode: "reserve", amount: 1 }], {
        token: randomUUID(),
      }),
    ).toEqual({ outcome: "refused", refused: ["reserve"] });
    expect(await storedValue(meterId)).toBe(100);
  });

  it("answers stale, counting nothing, when the configuration changed since admission", async () => {
    const clientId = randomUUID();
    const meterId = randomUUID();
    await writeSteps(REGION, [configVersionStep(clientId)], () => undefined);
    await writeSteps(REGION, [configVersionStep(clientId)], () => undefined);
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

/**
 * Run `body` with the SDK talking to the emulator through the lossy front (test/support): the
 * first TransactWriteItems is applied and its answer lost, so the SDK retries it. `stripToken`
 * removes ClientRequestToken from every transaction on its way through.
 */
async function throughLossyFront<T>(
  options: { stripToken: boolean },
  body: (attempts: TransactionAttempt[]) => Promise<T>,
): Promise<T> {
  const front = await startLossyFront(process.env.AWS_ENDPOINT_URL!);
  const restore = routeThrough(front);
  try {
    return await body(front.loseFirstAnswer(options));
  } finally {
    restore();
    await front.close();
  }
}

describe("commitCounters under a real SDK retry", () => {
  it("a committed transaction whose answer was lost is retried by the SDK with the same token: counted once", async () => {
    const meterId = randomUUID();
    const token = clientRequestToken(randomUUID(), "count:1");
    const { decision, attempts } = await throughLossyFront({ stripToken: false }, async (attempts) => ({
      decision: await commitCounters(REGION, [step("m", meterId, 10)], { token }),
      attempts,
    }));
    expect(decision).toEqual({ outcome: "counted" });
    // Two attempts reached the emulator (the first applied, its answer lost), with one token.
    expect(attempts).toEqual([
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
    const { decision, attempts } = await throughLossyFront({ stripToken: true }, async (attempts) => ({
      decision: await commitCounters(REGION, [step("m", meterId, 10)], {
        token: clientRequestToken(randomUUID(), "count:1"),
      }),
      attempts,
    }));
    expect(decision).toEqual({ outcome: "counted" });
    expect(attempts).toHaveLength(2);
    expect(await storedValue(meterId)).toBe(2);
  });
});
