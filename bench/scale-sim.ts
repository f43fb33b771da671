/**
 * `npm run bench:scale`: one limit under a demand far above it, from many warm instances at once,
 * against the emulator, two ways side by side (docs/scale.md):
 * (a) today's design: one TransactWriteItems per request (the rate counter's conditional ADD and
 *     the configVersion ConditionCheck, lib/data-plane/rate-window.ts) on one hot counter item;
 * (b) leased blocks: each instance leases blocks of the limit from the counter item
 *     (lib/data-plane/quota-lease.ts) and admits from its block without store calls.
 * Prints requests/s, store calls (counted with an SDK middleware: the real calls), conflicts and
 * throttles, the count admitted (b must admit exactly the limit), leases and give-backs, and a
 * projection of each onto DynamoDB's 1,000 write units/s per item. moto serves one call at a time
 * (about 300 a second here), so the per-request store-call figures are the ones that carry over.
 * A benchmark, not a test: the test is test/unit/quota-lease.test.ts. Sizes from the environment:
 * SIM_INSTANCES (20), SIM_CONCURRENCY per instance (4), SIM_LIMIT (1000), SIM_DEMAND (4000),
 * SIM_SERVICE_MS (5: the target's time for an admitted request).
 */
import { randomBytes, randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { dynamo, isServiceUnavailable } from "#lib/aws/clients.ts";
import { dynamoLeaseStore, QuotaLease, type QuotaWindow } from "#lib/data-plane/quota-lease.ts";
import { consumeRateWindow } from "#lib/data-plane/rate-window.ts";
import { GetCommand } from "#lib/db/document-client.ts";
import { keys } from "#lib/db/keys.ts";
import { tableName, transactionCancellationCodes } from "#lib/db/store.ts";
import { rateWindowAt } from "#lib/domain/rate-limit.ts";
import { startEmulator } from "#local/emulator.ts";
import { provisionTable } from "#local/provision.ts";

const REGION = "us-east-1";
const INSTANCES = Number(process.env.SIM_INSTANCES ?? 20);
const CONCURRENCY = Number(process.env.SIM_CONCURRENCY ?? 4);
const LIMIT = Number(process.env.SIM_LIMIT ?? 1000);
const DEMAND = Number(process.env.SIM_DEMAND ?? 4000);
const SERVICE_MS = Number(process.env.SIM_SERVICE_MS ?? 5);
/** DynamoDB's write ceiling of one partition, so of one item (docs/scale.md). */
const ITEM_WCU_PER_SECOND = 1000;

/** DynamoDB calls by command name, and failed calls by error name. */
function countCalls() {
  const calls = new Map<string, number>();
  const failures = new Map<string, number>();
  const name = `scale-sim-${randomBytes(4).toString("hex")}`;
  const stack = dynamo(REGION).middlewareStack as unknown as {
    add: (middleware: unknown, options: { step: string; name: string }) => void;
  };
  stack.add(
    (next: (args: unknown) => Promise<unknown>, context: { commandName?: string }) =>
      async (args: unknown) => {
        const key = context.commandName?.replace("Command", "") ?? "?";
        calls.set(key, (calls.get(key) ?? 0) + 1);
        try {
          return await next(args);
        } catch (error) {
          const errorName = error instanceof Error ? error.name : "?";
          failures.set(errorName, (failures.get(errorName) ?? 0) + 1);
          throw error;
        }
      },
    { step: "initialize", name },
  );
  const total = (map: Map<string, number>) => [...map.values()].reduce((a, b) => a + b, 0);
  return {
    reset: () => {
      calls.clear();
      failures.clear();
    },
    total: () => total(calls),
    describe: (map: "calls" | "failures") =>
      [...(map === "calls" ? calls : failures)].map(([k, v]) => `${k} ${v}`).join(", ") || "none",
  };
}

/** Each instance's share of the demand, served by CONCURRENCY loops. */
async function drive(demand: number, serve: (instance: number) => Promise<void>): Promise<number> {
  const started = performance.now();
  const perInstance = Math.ceil(demand / INSTANCES);
  await Promise.all(
    Array.from({ length: INSTANCES }, async (_, instance) => {
      let left = perInstance;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (left > 0) {
            left--;
            await serve(instance);
          }
        }),
      );
    }),
  );
  return (performance.now() - started) / 1000;
}

interface Outcome {
  seconds: number;
  requests: number;
  admitted: number;
  storeCalls: number;
  calls: string;
  failures: string;
  conflicts: number;
  throttles: number;
  /** Write units the hot counter item takes per request served (admitted or refused). */
  counterWcuPerRequest: number;
}

async function today(counter: ReturnType<typeof countCalls>, now: number): Promise<Outcome> {
  const credentialId = randomUUID();
  const runtime = { clientId: randomUUID(), version: 0 };
  let admitted = 0;
  let conflicts = 0;
  let throttles = 0;
  let requests = 0;
  counter.reset();
  const seconds = await drive(DEMAND, async () => {
    requests++;
    try {
      const decision = await consumeRateWindow(REGION, runtime, credentialId, LIMIT, now);
      if (decision !== "stale" && decision.allowed) {
        admitted++;
        await sleep(SERVICE_MS);
      }
    } catch (error) {
      if (transactionCancellationCodes(error)?.includes("TransactionConflict")) conflicts++;
      else if (isServiceUnavailable(error)) throttles++;
      else throw error;
    }
  });
  return {
    seconds,
    requests,
    admitted,
    storeCalls: counter.total(),
    calls: counter.describe("calls"),
    failures: counter.describe("failures"),
    conflicts,
    throttles,
    // Two underlying writes (prepare, commit) of the counter item per transaction, refused or not.
    counterWcuPerRequest: (2 * counter.total()) / requests,
  };
}

async function leased(counter: ReturnType<typeof countCalls>, window: QuotaWindow, demand: number) {
  const meterId = randomUUID();
  const key = (w: QuotaWindow) => keys.meterWindow(meterId, "hour", String(w.start));
  const leases = Array.from(
    { length: INSTANCES },
    () =>
      new QuotaLease({
        store: dynamoLeaseStore({ region: REGION, key, limit: LIMIT }),
        windowAt: () => window,
      }),
  );
  let throttles = 0;
  let requests = 0;
  counter.reset();
  const seconds = await drive(demand, async (instance) => {
    requests++;
    try {
      if (await leases[instance]!.take()) await sleep(SERVICE_MS);
    } catch (error) {
      if (isServiceUnavailable(error)) throttles++;
      else throw error;
    }
  });
  // Window end or idle: every instance gives its unspent units back.
  await Promise.all(leases.map((lease) => lease.release()));
  const stats = leases.map((lease) => lease.stats);
  const sum = (field: keyof QuotaLease["stats"]) => stats.reduce((total, s) => total + s[field], 0);
  const storeCalls = counter.total();
  const calls = counter.describe("calls");
  const item = await dynamo(REGION).send(
    new GetCommand({ TableName: tableName(), Key: key(window), ConsistentRead: true }),
  );
  return {
    outcome: {
      seconds,
      requests,
      admitted: sum("admitted"),
      storeCalls,
      calls,
      failures: counter.describe("failures"),
      conflicts: 0,
      throttles,
      // One write unit per lease or give-back (a plain UpdateItem of an item under 1 KB).
      counterWcuPerRequest: storeCalls / requests,
    } satisfies Outcome,
    leases: sum("leases"),
    leasedUnits: sum("leasedUnits"),
    returns: sum("returns"),
    returnedUnits: sum("returnedUnits"),
    counterValue: item.Item?.value,
  };
}

const fmt = (n: number, digits = 0) =>
  n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });

async function main() {
  process.env.AWS_ACCESS_KEY_ID ??= "bench";
  process.env.AWS_SECRET_ACCESS_KEY ??= "bench";
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = "true";
  process.env.LOG_LEVEL = "silent";
  process.env.TABLE_NAME = `scale-${randomBytes(3).toString("hex")}`;
  process.env.KMS_KEY_ALIAS = `alias/${process.env.TABLE_NAME}`;
  process.env.REGIONS = REGION;
  process.env.HOME_REGION = REGION;
  // The emulator answers one call at a time: a burst queues there (lib/aws/clients.ts).
  process.env.SDK_CONNECT_TIMEOUT_MS ??= "30000";
  process.env.SDK_REQUEST_TIMEOUT_MS ??= "30000";
  const emulator = await startEmulator();
  process.env.AWS_ENDPOINT_URL = emulator.endpoint;
  try {
    await provisionTable(REGION, process.env.TABLE_NAME);
    const counter = countCalls();
    // Every request of a run lands in one window: the one limit under test.
    const now = rateWindowAt(Date.now()).start + 1_000;
    const window = { start: now, end: now + 3_600_000 };
    console.log(
      `Limit ${fmt(LIMIT)}, demand ${fmt(DEMAND)} requests from ${INSTANCES} instances x ${CONCURRENCY} concurrent, ${SERVICE_MS} ms per admitted request\n`,
    );
    const a = await today(counter, now);
    const b = await leased(counter, window, DEMAND);
    // A demand below the limit, in a window of its own: everything passes, the rest goes back.
    const lowDemand = Math.floor(LIMIT / 2);
    const c = await leased(counter, { start: window.end, end: window.end + 3_600_000 }, lowDemand);
    const leasedColumn = (run: typeof b) => ({
      wall: fmt(run.outcome.seconds, 1),
      rps: fmt(run.outcome.requests / run.outcome.seconds),
      demand: fmt(run.outcome.requests),
      admitted: fmt(run.outcome.admitted),
      calls: fmt(run.outcome.storeCalls),
      byCommand: run.outcome.calls,
      perRequest: fmt(run.outcome.storeCalls / run.outcome.requests, 4),
      failures: run.outcome.failures,
      conflicts: `- / ${run.outcome.throttles}`,
      leases: `${fmt(run.leases)} / ${fmt(run.returns)}`,
      units: `${fmt(run.leasedUnits)} / ${fmt(run.returnedUnits)}`,
      counter: String(run.counterValue),
      wcu: fmt(run.outcome.counterWcuPerRequest, 4),
      projected: fmt(ITEM_WCU_PER_SECOND / run.outcome.counterWcuPerRequest),
    });
    const lb = leasedColumn(b);
    const lc = leasedColumn(c);
    const rows: string[][] = [
      ["", "(a) one transaction per request", "(b) leased blocks", "(c) leased, demand < limit"],
      ["wall time (s)", fmt(a.seconds, 1), lb.wall, lc.wall],
      ["requests/s achieved", fmt(a.requests / a.seconds), lb.rps, lc.rps],
      ["demand (requests)", fmt(a.requests), lb.demand, lc.demand],
      [`admitted (limit ${fmt(LIMIT)})`, fmt(a.admitted), lb.admitted, lc.admitted],
      ["store calls", fmt(a.storeCalls), lb.calls, lc.calls],
      ["store calls by command", a.calls, lb.byCommand, lc.byCommand],
      ["store calls per request", fmt(a.storeCalls / a.requests, 3), lb.perRequest, lc.perRequest],
      ["failed store calls", a.failures, lb.failures, lc.failures],
      ["TransactionConflict / throttles", `${a.conflicts} / ${a.throttles}`, lb.conflicts, lc.conflicts],
      ["leases / give-backs", "-", lb.leases, lc.leases],
      ["units leased / given back", "-", lb.units, lc.units],
      ["counter item after give-backs", "-", lb.counter, lc.counter],
      ["counter WCU per request", fmt(a.counterWcuPerRequest, 3), lb.wcu, lc.wcu],
      [
        "requests/s at 1,000 WCU/s on the item",
        fmt(ITEM_WCU_PER_SECOND / a.counterWcuPerRequest),
        lb.projected,
        lc.projected,
      ],
    ];
    const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
    for (const row of rows) console.log(row.map((cell, i) => cell.padEnd(widths[i]!)).join("  "));
    console.log(
      `\nProjection: (a) puts 2 write units (transaction prepare + commit) on the one counter item for every request, admitted or refused, so that item caps the credential at ${fmt(ITEM_WCU_PER_SECOND / 2)} requests/s whatever the limit; beyond it DynamoDB throttles and, with concurrent transactions on the item, cancels with TransactionConflict (moto serialises calls, so it shows none). (b) and (c) put one write unit per lease or give-back: with blocks of about 1 s of an instance's traffic each warm instance leases about once a second, so ${INSTANCES} instances put about ${INSTANCES} WCU/s on the item at any request rate (the last row is this run's calls per request scaled to the item's ceiling).`,
    );
    const exact = b.outcome.admitted === LIMIT && b.counterValue === b.outcome.admitted;
    const allPassed = c.outcome.admitted === c.outcome.requests && c.counterValue === c.outcome.admitted;
    console.log(
      exact && allPassed
        ? "\nExact: (b) admitted the limit exactly; (c) admitted every request; each counter equals its admitted count."
        : `\nNOT EXACT: (b) admitted ${b.outcome.admitted}, counter ${b.counterValue}; (c) admitted ${c.outcome.admitted} of ${c.outcome.requests}, counter ${c.counterValue}`,
    );
  } finally {
    await emulator.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
