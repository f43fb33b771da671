/**
 * Telemetry in the console (issue 23) in the shared Chromium against the real local stack with its
 * stream consumers on: traffic through the data plane to two proxies on a loopback target, the
 * buckets aggregated from the request logs' stream (within 30 s; the test waits for the API, bounded),
 * then the organisation's and one proxy's charts: each an image named for what it plots, with a data
 * table equal to GET .../telemetry for the same query. A meter alert digest in the organisation's
 * inbox links to its proxy's meters. Every page state is checked with axe and saved as a
 * screenshot; the organisation's telemetry also as docs/images/console-telemetry.png (with
 * UPDATE_DOCS_IMAGES=1).
 */
import { randomUUID } from "node:crypto";
import { mkdir } from "node:fs/promises";
import type { Server } from "node:http";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { notificationKeys, putNotification } from "#lib/db/entities/notification.ts";
import { listenWithBody } from "../support/loopback.ts";
import {
  callDataPlane,
  createProxyOf,
  createProxyParts,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";
import {
  checkPage,
  connectBrowser,
  describePageOnFailure,
  newOrganisation,
  signedInConsole,
  startConsoleStack,
} from "./support.ts";

const REGION = "eu-west-1";
const KEY = `telemetry-key-${randomUUID()}`;

let browser: Browser;
let stack: TestStack;
let context: BrowserContext;
let page: Page;
describePageOnFailure(() => page);
let user: TestUser;
let clientId: string;
let orders: string;
let search: string;
/** How far back the stack's clock is set (ms). */
let offset = 0;
const WRONG_KEY = "wrong-key-000000000000000000";
/** Per minute, oldest first: [proxy, path, expected status, key]. */
const PLAN: [string, string, number, string?][][] = [
  [
    ["orders", "/items?delay=0", 200],
    ["orders", "/items?delay=30", 200],
    ["orders", "/items?delay=60", 200],
  ],
  [
    ["orders", "/items?delay=10", 200],
    ["orders", "/items?delay=90", 200],
    ["orders", "/status/500", 500],
    ["search", "/q?delay=5", 200],
  ],
  [
    ["orders", "/items?delay=20", 200],
    ["orders", "/items?delay=40", 200],
    ["orders", "/items?delay=150", 200],
    ["orders", "/status/404", 404],
    ["orders", "/items", 403, WRONG_KEY],
    ["search", "/q?delay=15", 200],
    ["search", "/q?delay=25", 200],
  ],
  [
    ["orders", "/items?delay=0", 200],
    ["search", "/q?delay=10", 200],
  ],
  [
    ["orders", "/items?delay=50", 200],
    ["orders", "/items?delay=70", 200],
    ["search", "/q?delay=35", 200],
  ],
];
const servers: Server[] = [];

interface Bucket {
  sKey: string;
  countMap: Record<string, number>;
  successCountMap: Record<string, number>;
  errorCountMap: Record<string, number>;
  codeCountMap: Record<string, number>;
  countryCountMap: Record<string, number>;
  errorRateMap: Record<string, number>;
  p50ResponseTimeMap: Record<string, number>;
  p95ResponseTimeMap: Record<string, number>;
  p99ResponseTimeMap: Record<string, number>;
}

const heading = (name: string | RegExp) => page.getByRole("heading", { level: 1, name });

async function telemetryOf(path: string): Promise<Bucket[]> {
  const answer = await user.api.get(`${path}?interval=minute`);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body.telemetry;
}
const total = (buckets: Bucket[]) => buckets.reduce((sum, bucket) => sum + (bucket.countMap.proxy ?? 0), 0);

/** The bucket's key as the tables name it: 2026-11-27-02-15 is "2026-11-27 02:15 UTC". */
const minuteName = (key: string) => {
  const [y, m, d, h, min] = key.split("-");
  return `${y}-${m}-${d} ${h}:${min} UTC`;
};
const round = (value: number) => Math.round(value * 10) / 10;

/** The rows of a chart's data table, each cell's text (the header row left out). */
async function tableRows(name: RegExp): Promise<string[][]> {
  const table = page.getByRole("table", { name });
  expect(await table.count()).toBe(1);
  const rows = table.getByRole("row");
  const cells: string[][] = [];
  // Row 0 is the header; each other row is its bucket (a row header) and its values.
  for (let i = 1; i < (await rows.count()); i++) {
    const row = rows.nth(i);
    cells.push([
      (await row.getByRole("rowheader").textContent()) ?? "",
      ...(await row.getByRole("cell").allTextContents()),
    ]);
  }
  return cells;
}

type Leg = "proxy" | "target";

/** The `<code>:<leg>` sums of a map over the buckets, most first, as the top tables show them. */
function topOf(buckets: Bucket[], pick: (bucket: Bucket) => Record<string, number>, leg: Leg) {
  const sums = new Map<string, number>();
  for (const bucket of buckets)
    for (const [key, count] of Object.entries(pick(bucket))) {
      const [code, source] = key.split(":");
      if (source === leg && code) sums.set(code, (sums.get(code) ?? 0) + count);
    }
  return [...sums.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
}

/** Every chart's table equals the API's buckets of the same query (interval minute, no range), for a leg. */
async function expectChartsToMatch(buckets: Bucket[], leg: Leg = "proxy") {
  const withTraffic = buckets.filter((bucket) => (bucket.countMap[leg] ?? 0) > 0);
  expect(withTraffic.length).toBeGreaterThan(0);
  expect(await tableRows(/^data of the chart: requests per minute/i)).toEqual(
    withTraffic.map((bucket) => [
      minuteName(bucket.sKey),
      String(bucket.countMap[leg] ?? 0),
      String(bucket.successCountMap[leg] ?? 0),
      String(bucket.errorCountMap[leg] ?? 0),
    ]),
  );
  const ms = (value: number | undefined) => (value === undefined ? "—" : `${round(value)} ms`);
  expect(await tableRows(/^data of the chart: response time per minute/i)).toEqual(
    withTraffic.map((bucket) => [
      minuteName(bucket.sKey),
      ms(bucket.p50ResponseTimeMap[leg]),
      ms(bucket.p95ResponseTimeMap[leg]),
      ms(bucket.p99ResponseTimeMap[leg]),
    ]),
  );
  expect(await tableRows(/^data of the chart: share of answers that were errors/i)).toEqual(
    withTraffic.map((bucket) => [
      minuteName(bucket.sKey),
      bucket.errorRateMap[leg] === undefined ? "—" : `${round(bucket.errorRateMap[leg] * 100)}%`,
    ]),
  );
  expect(await tableRows(/^data of the chart: requests by http status/i)).toEqual(
    topOf(buckets, (bucket) => bucket.codeCountMap, leg).map(([code, count]) => [code, String(count)]),
  );
  // Loopback callers have no country: XX (docs/telemetry.md, "Country database").
  expect(await tableRows(/^data of the chart: requests by the caller's country/i)).toEqual(
    topOf(buckets, (bucket) => bucket.countryCountMap, leg).map(([code, count]) => [
      code === "XX" ? "Unknown (XX)" : code,
      String(count),
    ]),
  );
  // Five charts, each an image whose name says what it plots, drawn (uPlot's canvas inside).
  const charts = page.getByRole("img", { name: /^chart: /i });
  expect(await charts.count()).toBe(5);
  for (const name of [
    /^chart: requests per minute, successful \(2xx, 3xx\) and errors \(4xx, 5xx\)/i,
    /^chart: response time per minute, 50th, 95th and 99th percentiles/i,
    /^chart: share of answers that were errors/i,
    /^chart: requests by the caller's country/i,
    /^chart: requests by http status/i,
  ]) {
    const chart = page.getByRole("img", { name });
    expect(await chart.count()).toBe(1);
    expect(await chart.locator("canvas").count()).toBe(1);
    expect((await chart.boundingBox())?.height ?? 0).toBeGreaterThan(250);
  }
}

beforeAll(async () => {
  let origin: string;
  ({ stack, origin } = await startConsoleStack({ streams: true, clock: () => Date.now() - offset }));
  browser = await connectBrowser();
  ({ context, page, user } = await signedInConsole(browser, stack, origin));
  await page.setViewportSize({ width: 1100, height: 900 });
  clientId = await newOrganisation(user, "Acme Shop");
  const target = await listenWithBody((req, _body, res) => {
    const status = Number(/^\/status\/(\d{3})/.exec(req.url ?? "")?.[1] ?? 200);
    const delay = Number(new URL(req.url ?? "/", "http://x").searchParams.get("delay") ?? 0);
    setTimeout(() => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end('{"ok":true}');
    }, delay);
  }, servers);
  const parts = await createProxyParts(user, clientId, { region: REGION, key: KEY, targetBaseURL: target });
  orders = await createProxyOf(user, clientId, REGION, parts, "Orders");
  search = await createProxyOf(user, clientId, REGION, parts, "Search");
  const call = async (proxyId: string, path: string, expected: number, key = KEY) =>
    expect(
      (
        await callDataPlane(`${stack.regions[REGION]}/api/${proxyId}${path}`, {
          headers: { "x-api-key": key },
        })
      ).status,
    ).toBe(expected);
  // Five minutes of traffic: the stack's clock is set back 4, 3, 2, 1 and 0 minutes (the request
  // logs' receive times, so the telemetry's minute buckets, follow it). Orders: 11 successes with
  // spread response times, 2 target errors (500, 404) and 1 denied caller (403); Search: 5 successes.
  for (const [minutesAgo, steps] of PLAN.entries()) {
    offset = (PLAN.length - 1 - minutesAgo) * 60_000;
    for (const [proxy, path, status, key] of steps)
      await call(proxy === "orders" ? orders : search, path, status, key);
  }
  offset = 0;

  // Aggregated from the request logs' stream within 30 s (docs/telemetry.md): wait, bounded.
  const deadline = Date.now() + 40_000;
  while (Date.now() < deadline) {
    const [all, one] = await Promise.all([
      telemetryOf(`/api/clients/${clientId}/telemetry`),
      telemetryOf(`/api/clients/${clientId}/proxies/${search}/telemetry`),
    ]);
    if (total(all) === 19 && total(one) === 5) break;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  expect(total(await telemetryOf(`/api/clients/${clientId}/telemetry`))).toBe(19);
  expect(total(await telemetryOf(`/api/clients/${clientId}/proxies/${search}/telemetry`))).toBe(5);
});

afterAll(async () => {
  await context?.close();
  await browser?.close();
  await stack?.stop();
  for (const server of servers) {
    server.closeAllConnections();
    server.close();
  }
});

describe("telemetry in the console", () => {
  it("charts the organisation's traffic per minute with the API's counts", async () => {
    await page.goto(`/organisations/${clientId}/telemetry`);
    await expect.poll(() => heading(/^telemetry$/i).count()).toBe(1);
    const range = page.getByRole("form", { name: /^range$/i });
    await range.getByLabel("Interval").selectOption("minute");
    await range.getByRole("button", { name: /^show telemetry$/i }).click();
    await expect.poll(() => page.getByRole("img", { name: /^chart: requests per minute/i }).count()).toBe(1);
    await expect
      .poll(async () => (await page.getByRole("status").first().textContent()) ?? "")
      .toMatch(/^19 requests \(inbound leg\): 16 successful, 3 errors, in [4-6] minutes with traffic/);
    await expectChartsToMatch(await telemetryOf(`/api/clients/${clientId}/telemetry`));
    await checkPage(page, "telemetry");
    // For the README: the page from its top to the latency chart's legend, rewritten only when
    // asked (UPDATE_DOCS_IMAGES=1; a test run leaves the tree as it was).
    const latency = await page.getByRole("img", { name: /^chart: response time per minute/i }).boundingBox();
    expect(latency).not.toBeNull();
    if (process.env.UPDATE_DOCS_IMAGES) {
      await mkdir("docs/images", { recursive: true });
      await page.screenshot({
        path: "docs/images/console-telemetry.png",
        fullPage: true,
        clip: { x: 0, y: 0, width: 1100, height: Math.ceil((latency?.y ?? 0) + (latency?.height ?? 0) + 16) },
      });
    }

    // The forwarding leg: the refused caller never reached the target (18 of 19 forwarded).
    await range.getByLabel("Leg").selectOption("target");
    await range.getByRole("button", { name: /^show telemetry$/i }).click();
    await expect
      .poll(async () => (await page.getByRole("status").first().textContent()) ?? "")
      .toMatch(/^18 requests \(forwarding leg\): 16 successful, 2 errors/);
    await expectChartsToMatch(await telemetryOf(`/api/clients/${clientId}/telemetry`), "target");
    await checkPage(page, "telemetry-forwarding");
    await range.getByLabel("Leg").selectOption("proxy");
  });

  it("charts one proxy's traffic on its own page", async () => {
    await page.getByRole("link", { name: /^telemetry of search$/i }).click();
    await expect.poll(() => heading(/^telemetry of search$/i).count()).toBe(1);
    const range = page.getByRole("form", { name: /^range$/i });
    await range.getByLabel("Interval").selectOption("minute");
    await range.getByRole("button", { name: /^show telemetry$/i }).click();
    await expect
      .poll(async () => (await page.getByRole("status").first().textContent()) ?? "")
      .toMatch(/^5 requests \(inbound leg\): 5 successful, 0 errors/);
    expect(new URL(page.url()).pathname).toBe(`/organisations/${clientId}/proxies/${search}/telemetry`);
    await expectChartsToMatch(await telemetryOf(`/api/clients/${clientId}/proxies/${search}/telemetry`));
    await checkPage(page, "telemetry-proxy");
  });

  it("says so when a range has no traffic", async () => {
    const range = page.getByRole("form", { name: /^range$/i });
    await range.getByLabel("Interval").selectOption("hour");
    await range.getByLabel("To").fill("2020-01-01T00:00");
    await range.getByRole("button", { name: /^show telemetry$/i }).click();
    await expect.poll(() => page.getByText(/^no traffic in this range/i).count()).toBe(1);
    expect(await page.getByRole("img").count()).toBe(0);
    await checkPage(page, "telemetry-empty");

    // A range that ends before it begins: the API's message next to From.
    await range.getByLabel("From").fill("2021-01-01T00:00");
    await range.getByRole("button", { name: /^show telemetry$/i }).click();
    await expect.poll(() => range.getByLabel("From").getAttribute("aria-invalid")).toBe("true");
    await checkPage(page, "telemetry-range-error");
  });

  it("links a meter alert digest in the organisation's inbox to its proxy's meters", async () => {
    const meterId = randomUUID();
    const notificationId = randomUUID();
    // A digest as the meter digests write it (lib/domain/meter-digests.ts usageNotification).
    await putNotification({
      ...notificationKeys.item({ kind: "client", clientId }, notificationId),
      entity: "notification",
      notificationId,
      type: "usage",
      title: `Usage alert: meter ${meterId}`,
      message: `Meter ${meterId} of proxy ${orders} reached its minute alert threshold 3 times.`,
      read: false,
      createdAt: new Date().toISOString(),
      TTL: Math.floor(Date.now() / 1000) + 86_400,
      data: { meterId, proxyId: orders, notifyTrigger: "threshold", window: "minute", count: 3 },
    });
    await page.goto(`/organisations/${clientId}/notifications`);
    const link = page.getByRole("link", {
      name: new RegExp(`^open the meter of .usage alert: meter ${meterId}`, "i"),
    });
    await expect.poll(() => link.count()).toBe(1);
    expect(await link.getAttribute("href")).toBe(
      `/organisations/${clientId}/proxies/${orders}/meters#meter-${meterId}`,
    );
    await checkPage(page, "notifications-meter-alert");
    await link.click();
    await expect
      .poll(() => new URL(page.url()).pathname)
      .toBe(`/organisations/${clientId}/proxies/${orders}/meters`);
  });
});
