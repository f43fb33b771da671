/**
 * Meter alert digests through the real data plane (spec 6.3, issue 9's "Done means"): meters
 * created through the Core API, requests sent to the region's data-plane address, the data plane's
 * own writes (the request log's `metering`, the meter counters) read from the table's stream by the
 * stream consumer (local stream poller), the digest job run for the minute period, and the result
 * read through the Core API and from the emulator's SES: one `usage` notification and one e-mail
 * per meter per period, for each of the three triggers, and nothing more on a rerun.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { handler as digestHandler } from "#functions/meter-digest.ts";
import { occurrenceKeys } from "#lib/db/entities/meter-occurrence.ts";
import { keys } from "#lib/db/keys.ts";
import type { NotifyTrigger } from "#lib/domain/meter-periods.ts";
import { type CalendarWindow, windowAt } from "#lib/shared/meter-windows.ts";
import { TestClock } from "#test/support/clock.ts";
import { sentEmails } from "#test/support/emulator.ts";
import {
  callDataPlane,
  createClientFor,
  created,
  createProxyOf,
  createProxyParts,
  joinClient,
  startTestStack,
  storedItem,
  type TestStack,
  type TestUser,
} from "#test/support/stack.ts";
import { loggedRecords } from "../support/request-logs.ts";

const REGION = "eu-west-1"; // not the home region: the digest reads every region's table
const KEY = "meter-alerts-caller-key-1234567890";

let stack: TestStack;
/** The stack's clock (lib/clock.ts, and the stream records' times): the requests share a minute of it. */
const clock = new TestClock();
let owner: TestUser;
let reader: TestUser;
let clientId: string;
let target: Server;
let proxyCredentialId: string;
let targetCredentialId: string;
let targetId: string;

interface ApiNotification {
  notificationId: string;
  type: string;
  title: string;
  message: string;
  data?: Record<string, unknown>;
}

beforeAll(async () => {
  target = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
  stack = await startTestStack({ streams: true, clock: clock.now });
  owner = await stack.newUser();
  reader = await stack.newUser();
  clientId = await createClientFor(owner, "Alerted");
  await joinClient(owner, clientId, reader, "reader");
  ({ proxyCredentialId, targetCredentialId, targetId } = await createProxyParts(owner, clientId, {
    region: REGION,
    key: KEY,
    targetBaseURL: `http://127.0.0.1:${(target.address() as AddressInfo).port}`,
  }));
});

afterAll(async () => {
  await stack?.stop();
  target?.closeAllConnections();
  await new Promise((resolve) => target?.close(resolve));
});

/** A proxy of its own for one meter (a 429 of one meter then never touches another's counts). */
async function proxyWithMeter(meter: Record<string, unknown>): Promise<{ proxyId: string; meterId: string }> {
  const proxyId = await createProxyOf(owner, clientId, REGION, {
    proxyCredentialId,
    targetId,
    targetCredentialId,
  });
  const createdMeter = await created(
    owner.api.post(`/api/clients/${clientId}/proxies/${proxyId}/meters`, meter),
    "meters",
  );
  return { proxyId, meterId: createdMeter.meterId as string };
}

const call = (proxyId: string, method: string) =>
  callDataPlane(`${stack.regions[REGION]}/api/${proxyId}/items`, {
    method,
    headers: { "x-api-key": KEY, ...(method === "POST" ? { "content-type": "application/json" } : {}) },
    body: method === "POST" ? '{"n":1}' : undefined,
  });

/** Waits until the request log lists `count` records of the proxy (the log is written after the answer). */
const waitForLogs = (proxyId: string, count: number) => loggedRecords(owner.api, clientId, proxyId, count);

async function usageNotificationsOf(meterId: string): Promise<ApiNotification[]> {
  const response = await owner.api.get(`/api/clients/${clientId}/notifications?limit=100`);
  expect(response.status).toBe(200);
  return (response.body.notifications as ApiNotification[]).filter(
    (n) => n.type === "usage" && n.message.includes(meterId),
  );
}

const emailsAbout = async (to: string, meterId: string) =>
  (await sentEmails(to)).filter((email) => email.subject.includes(meterId));

const occurrence = (meterId: string, trigger: NotifyTrigger, minute: CalendarWindow) =>
  storedItem(
    occurrenceKeys.item({
      cadence: "minute",
      periodStart: minute.start,
      clientId,
      meterId,
      notifyTrigger: trigger,
    }),
    REGION,
  );

const ALERTS = (notifyTrigger: NotifyTrigger) => ({ enabled: true, cadence: "minute", notifyTrigger });

describe("alert digests of the three triggers, from real data-plane traffic", () => {
  let minute: CalendarWindow;
  let predicate: { proxyId: string; meterId: string };
  let exceed: { proxyId: string; meterId: string };
  let threshold: { proxyId: string; meterId: string };
  const figures: Record<string, number> = {};

  /** The digest job, run as its schedule would just after the requests' minute (and its grace) ended. */
  const runDigest = () =>
    digestHandler({ cadence: "minute", time: new Date(minute.end + 61_000).toISOString() });

  it("sends traffic: a conditional meter matching POSTs, a limit of 1 per hour, a threshold of 2 per hour", async () => {
    [predicate, exceed, threshold] = await Promise.all([
      proxyWithMeter({
        meterType: "request_count",
        meterActive: true,
        meterMode: "conditional",
        effect: "include",
        methods: ["POST"],
        alerts: ALERTS("predicate_match"),
      }),
      proxyWithMeter({
        meterType: "request_count",
        meterActive: true,
        limits: { hour: 1 },
        alerts: ALERTS("exceed"),
      }),
      proxyWithMeter({
        meterType: "request_count",
        meterActive: true,
        alerts: { ...ALERTS("threshold"), alertThreshold: { hour: 2 } },
      }),
    ]);
    // Every request in one minute: 1 s into a fresh one of the stack's clock.
    minute = windowAt("minute", clock.toNextWindow());
    const started = performance.now();

    const predicateStatuses: number[] = [];
    for (const method of ["POST", "GET", "POST", "GET", "POST"])
      predicateStatuses.push((await call(predicate.proxyId, method)).status);
    const exceedStatuses: number[] = [];
    for (let i = 0; i < 3; i++) exceedStatuses.push((await call(exceed.proxyId, "GET")).status);
    const thresholdStatuses: number[] = [];
    for (let i = 0; i < 3; i++) thresholdStatuses.push((await call(threshold.proxyId, "GET")).status);
    figures.requestsMs = performance.now() - started;
    expect(windowAt("minute", clock.now()).start, "the requests ran over a minute boundary").toBe(
      minute.start,
    );

    expect(predicateStatuses).toEqual([200, 200, 200, 200, 200]);
    expect(exceedStatuses).toEqual([200, 429, 429]);
    expect(thresholdStatuses).toEqual([200, 200, 200]);

    const logged = performance.now();
    await Promise.all([
      waitForLogs(predicate.proxyId, 5),
      waitForLogs(exceed.proxyId, 3),
      waitForLogs(threshold.proxyId, 3),
    ]);
    figures.logsMs = performance.now() - logged;
    const drained = performance.now();
    await stack.streams?.drain();
    figures.drainMs = performance.now() - drained;

    // The threshold meter's counter, as the data plane wrote it (only the window with a threshold).
    expect(
      await storedItem(
        keys.meterWindow(threshold.meterId, "hour", windowAt("hour", minute.start).start),
        REGION,
      ),
    ).toMatchObject({
      entity: "meterCounter",
      meterId: threshold.meterId,
      proxyId: threshold.proxyId,
      clientId,
      window: "hour",
      windowStart: windowAt("hour", minute.start).start,
      windowEnd: windowAt("hour", minute.start).end,
      value: 3,
    });
    // What the stream consumer made of it: 3 POSTs matched, 2 refusals, 1 crossing (1 -> 2).
    expect((await occurrence(predicate.meterId, "predicate_match", minute))?.occurrences).toBe(3);
    expect(await occurrence(exceed.meterId, "exceed", minute)).toMatchObject({
      occurrences: 2,
      hourCount: 2,
    });
    expect(await occurrence(threshold.meterId, "threshold", minute)).toMatchObject({
      occurrences: 1,
      hourCount: 1,
    });
  }, 60_000);

  it("the digest job writes exactly one usage notification per meter, with its data, and one e-mail each", async () => {
    const started = performance.now();
    const summary = await runDigest();
    figures.digestMs = performance.now() - started;
    expect(summary.failed).toBe(0);
    expect(summary.notifications).toBe(3);

    const period = {
      periodStart: new Date(minute.start).toISOString(),
      periodEnd: new Date(minute.end).toISOString(),
      cadence: "minute",
    };
    const expected = [
      { meter: predicate, trigger: "predicate_match", window: null, count: 3, windows: {} },
      { meter: exceed, trigger: "exceed", window: "hour", count: 2, windows: { hour: 2 } },
      { meter: threshold, trigger: "threshold", window: "hour", count: 1, windows: { hour: 1 } },
    ] as const;
    for (const { meter, trigger, window, count, windows } of expected) {
      const notifications = await usageNotificationsOf(meter.meterId);
      expect(notifications, trigger).toHaveLength(1);
      const [notification] = notifications;
      expect(notification?.title).toContain(meter.meterId);
      expect(notification?.message).toContain(meter.meterId);
      expect(notification?.data).toEqual({
        meterId: meter.meterId,
        proxyId: meter.proxyId,
        notifyTrigger: trigger,
        window,
        count,
        ...period,
        windows,
      });
      const emails = await emailsAbout(owner.email, meter.meterId);
      expect(emails, trigger).toHaveLength(1);
      expect(emails[0]?.body).toContain(notification?.notificationId);
      expect(await emailsAbout(reader.email, meter.meterId)).toHaveLength(0);
    }
  });

  it("a rerun, and a later run, add nothing", async () => {
    const emailsBefore = (await sentEmails()).length;
    expect((await runDigest()).notifications).toBe(0);
    expect(
      (await digestHandler({ cadence: "minute", time: new Date(minute.end + 5 * 60_000).toISOString() }))
        .notifications,
    ).toBe(0);
    for (const meter of [predicate, exceed, threshold])
      expect(await usageNotificationsOf(meter.meterId)).toHaveLength(1);
    expect((await sentEmails()).length).toBe(emailsBefore);
    process.stdout.write(
      `meter alerts e2e: requests ${figures.requestsMs?.toFixed(0)} ms, logs visible ${figures.logsMs?.toFixed(0)} ms, drain ${figures.drainMs?.toFixed(0)} ms, digest ${figures.digestMs?.toFixed(0)} ms\n`,
    );
  });
});
