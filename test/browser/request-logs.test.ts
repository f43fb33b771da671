/**
 * Request logs in the console (issue 23, spec 4.11) in the shared Chromium against the real local
 * stack: a proxy on a loopback target that echoes what it receives (headers and body), called
 * through the data plane with a proxy credential (an API key) and a target credential (a bearer
 * token). The calls just made are listed; a request's detail shows its headers and its JSON bodies
 * pretty-printed, and neither credential's secret although the target echoed both; the status
 * class and time range filters and the paging further back. Found by role and label only; every
 * page state is checked with axe and saved as a screenshot.
 */
import { randomUUID } from "node:crypto";
import type { Server } from "node:http";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
const PROXY_KEY = `proxy-key-${randomUUID()}`;
const TARGET_TOKEN = `target-token-${randomUUID()}`;

let browser: Browser;
let stack: TestStack;
let context: BrowserContext;
let page: Page;
describePageOnFailure(() => page);
let user: TestUser;
let clientId: string;
let proxyId: string;
/** Local time (the browser's) at which the second batch of calls starts, to the second. */
let cut: number;
const servers: Server[] = [];
/** The Authorization header each call brought to the target. */
const received: string[] = [];

const heading = (name: string | RegExp) => page.getByRole("heading", { level: 1, name });
const table = () => page.getByRole("table", { name: /^requests of echo proxy/i });
/** The body rows of the requests table (its first row is the header). */
const rowCount = async () => Math.max(0, (await table().getByRole("row").count()) - 1);

/** Through the data plane, with the proxy credential. */
async function call(path: string, init: RequestInit = {}) {
  const response = await callDataPlane(`${stack.regions[REGION]}/api/${proxyId}${path}`, {
    ...init,
    headers: { "x-api-key": PROXY_KEY, ...(init.headers as Record<string, string>) },
  });
  return response;
}

/** A `datetime-local` value of `ms` in the browser's time zone, to the second. */
const localValue = (ms: number) =>
  page.evaluate((at) => {
    const date = new Date(at);
    const two = (n: number) => String(n).padStart(2, "0");
    return `${date.getFullYear()}-${two(date.getMonth() + 1)}-${two(date.getDate())}T${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}`;
  }, ms);

beforeAll(async () => {
  let origin: string;
  ({ stack, origin } = await startConsoleStack());
  browser = await connectBrowser();
  ({ context, page, user } = await signedInConsole(browser, stack, origin));
  clientId = await newOrganisation(user);
  // The target answers what it received: method, path, headers and body (and the status /status/N asks).
  const echo = await listenWithBody((req, body, res) => {
    received.push(String(req.headers.authorization ?? ""));
    const status = Number(/^\/status\/(\d{3})/.exec(req.url ?? "")?.[1] ?? 200);
    res.writeHead(status, { "content-type": "application/json", "x-echo": "yes" });
    res.end(
      JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body: body.toString("utf8") }),
    );
  }, servers);
  const parts = await createProxyParts(user, clientId, {
    region: REGION,
    key: PROXY_KEY,
    targetBaseURL: echo,
    targetCredential: { authType: "bearer", secret: { token: TARGET_TOKEN } },
  });
  proxyId = await createProxyOf(user, clientId, REGION, parts, "Echo proxy");

  // First batch: a caller with a wrong key (refused: never forwarded), then four reads.
  expect((await call("/items/0", { headers: { "x-api-key": "wrong-key-000000000000000000" } })).status).toBe(
    403,
  );
  // Then four reads. Then, from the next whole second on: an order, a 404 and a 503.
  for (let i = 1; i <= 4; i++) expect((await call(`/items/${i}`)).status).toBe(200);
  cut = Math.ceil((Date.now() + 1) / 1000) * 1000;
  await new Promise((resolve) => setTimeout(resolve, cut - Date.now() + 20));
  const order = await call("/orders", {
    method: "POST",
    headers: { "content-type": "application/json" },
    // The caller's key in the body too: the target echoes it back along with its own token.
    body: JSON.stringify({ qty: 2, item: "widget", copyOfKey: PROXY_KEY }),
  });
  expect(order.status).toBe(200);
  expect((await call("/status/404")).status).toBe(404);
  expect((await call("/status/503")).status).toBe(503);
  // The target did receive the target credential's secret (and echoed it back in its body).
  expect(received).toHaveLength(7);
  expect(received.every((value) => value === `Bearer ${TARGET_TOKEN}`)).toBe(true);
  expect(order.text).toContain(TARGET_TOKEN);
  expect(order.text).toContain(PROXY_KEY);

  // The data plane writes its log after answering: wait (bounded) until the API lists all eight.
  const deadline = Date.now() + 20_000;
  const listed = async () =>
    (await user.api.get(`/api/clients/${clientId}/proxies/${proxyId}/requests`)).body.totalRequests;
  while ((await listed()) < 8 && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 200));
  expect(await listed()).toBe(8);
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

describe("request logs in the console", () => {
  it("lists the calls just made, newest first, with their status and duration", async () => {
    await page.goto(`/organisations/${clientId}/request-logs`);
    await expect.poll(() => heading(/^request logs$/i).count()).toBe(1);
    await expect.poll(rowCount).toBe(8);
    const text = (await table().textContent()) ?? "";
    for (const path of ["/items/1", "/items/4", "/orders", "/status/404", "/status/503"])
      expect(text).toContain(path);
    expect(text).toContain("404 (client error)");
    expect(text).toContain("503 (server error)");
    // The service code the proxy answered (service-proxy-code), as the API lists it.
    expect(text).toContain("proxy-access-granted");
    expect(text).toContain("proxy-access-denied");
    expect(await table().getByRole("row").nth(8).textContent()).toContain("403 (client error)");
    // Newest first: the first body row is the last call.
    expect(await table().getByRole("row").nth(1).textContent()).toContain("/status/503");
    // The API's list, in the same order.
    const listed = await user.api.get(`/api/clients/${clientId}/proxies/${proxyId}/requests`);
    const paths = listed.body.requests.map(
      (record: { proxyData: { apiPath: string } }) => record.proxyData.apiPath,
    );
    const shown: string[] = [];
    for (let i = 1; i <= 8; i++)
      shown.push((await table().getByRole("row").nth(i).getByRole("link").textContent()) ?? "");
    expect(shown).toEqual(paths);
    expect(
      listed.body.requests.map((record: { proxyData: { code: string } }) => record.proxyData.code),
    ).toEqual([...Array(7).fill("proxy-access-granted"), "proxy-access-denied"]);
    await checkPage(page, "request-logs");
  });

  it("shows a request's headers and pretty-printed bodies, with neither credential's secret", async () => {
    await table()
      .getByRole("link", { name: /^post \/orders at/i })
      .click();
    await expect.poll(() => heading(/^request post \/orders$/i).count()).toBe(1);
    const headers = page.getByRole("table", { name: /^request headers$/i });
    await expect.poll(() => headers.count()).toBe(1);
    // The caller's API key is shown as the redaction marker.
    const keyRow = headers.getByRole("row", { name: /x-api-key/i });
    expect(await keyRow.getByRole("cell").textContent()).toBe("[redacted]");
    // The request body, pretty-printed JSON.
    const requestBody = page.getByRole("region", { name: /^request body \(json, pretty-printed/i });
    expect(await requestBody.textContent()).toContain(
      '"qty": 2,\n  "item": "widget",\n  "copyOfKey": "[redacted]"',
    );
    // The target echoed both secrets in its body: the log holds the marker instead.
    const responseBody = page.getByRole("region", { name: /^response body \(json, pretty-printed/i });
    const echoed = (await responseBody.textContent()) ?? "";
    expect(echoed).toContain('"authorization": "Bearer [redacted]"');
    expect(echoed).toContain('"method": "POST"');
    expect(echoed).toContain(
      '"body": "{\\"qty\\":2,\\"item\\":\\"widget\\",\\"copyOfKey\\":\\"[redacted]\\"}"',
    );
    const responseHeaders = page.getByRole("table", { name: /^response headers$/i });
    expect(
      await responseHeaders
        .getByRole("row", { name: /x-echo/i })
        .getByRole("cell")
        .textContent(),
    ).toBe("yes");
    const whole = (await page.content()) + ((await page.locator("body").textContent()) ?? "");
    expect(whole).not.toContain(TARGET_TOKEN);
    expect(whole).not.toContain(PROXY_KEY);
    await checkPage(page, "request-log-detail");

    await page.getByRole("link", { name: /^back to the requests of echo proxy$/i }).click();
    await expect.poll(rowCount).toBe(8);
  });

  it("filters by status class and by time range", async () => {
    const filters = page.getByRole("form", { name: /^filter$/i });
    await filters.getByLabel("Status").selectOption({ label: "4xx client error" });
    await filters.getByRole("button", { name: /^show requests$/i }).click();
    await expect.poll(rowCount).toBe(2);
    expect(await table().textContent()).toContain("/status/404");
    expect(await table().textContent()).toContain("/items/0");
    await expect
      .poll(() => page.getByText("2 of the 8 requests loaded are 4xx client error.").count())
      .toBe(1);
    await checkPage(page, "request-logs-4xx");

    await filters.getByLabel("Status").selectOption({ label: "5xx server error" });
    await filters.getByRole("button", { name: /^show requests$/i }).click();
    await expect.poll(async () => (await table().textContent()) ?? "").toContain("/status/503");
    await expect.poll(rowCount).toBe(1);

    // From the second batch on: the order, the 404 and the 503 (the four reads were before).
    await filters.getByLabel("Status").selectOption({ label: "All statuses" });
    await filters.getByLabel("From").fill(await localValue(cut));
    await filters.getByRole("button", { name: /^show requests$/i }).click();
    await expect.poll(rowCount).toBe(3);
    const text = (await table().textContent()) ?? "";
    expect(text).toContain("/orders");
    expect(text).not.toContain("/items/");
    await checkPage(page, "request-logs-time-range");

    // A range that ends before it begins: the API's message next to From.
    await filters.getByLabel("To").fill(await localValue(cut - 3_600_000));
    await filters.getByRole("button", { name: /^show requests$/i }).click();
    await expect.poll(() => filters.getByLabel("From").getAttribute("aria-invalid")).toBe("true");
    await expect
      .poll(() => page.getByText(/^error: must not be later than processedBefore/i).count())
      .toBe(1);
    await checkPage(page, "request-logs-range-error");

    // Until before the first call: nothing, and the empty state says what to do next.
    await filters.getByLabel("From").fill("");
    await filters.getByLabel("To").fill(await localValue(cut - 3_600_000));
    await filters.getByRole("button", { name: /^show requests$/i }).click();
    await expect.poll(() => page.getByText("No requests in this range.").count()).toBe(1);
    expect(await page.getByRole("link", { name: /^the proxy's page$/i }).count()).toBe(1);
    await checkPage(page, "request-logs-empty");
  });

  it("pages further back: five, then the three older ones", async () => {
    const filters = page.getByRole("form", { name: /^filter$/i });
    await filters.getByLabel("To").fill("");
    await filters.getByLabel("Requests per page").selectOption("5");
    await filters.getByRole("button", { name: /^show requests$/i }).click();
    await expect.poll(rowCount).toBe(5);
    const firstPage = (await table().textContent()) ?? "";
    expect(firstPage).not.toContain("/items/1");
    expect(firstPage).not.toContain("/items/2");
    await checkPage(page, "request-logs-paged");
    await page.getByRole("button", { name: /^load older requests$/i }).click();
    await expect.poll(rowCount).toBe(8);
    const both = (await table().textContent()) ?? "";
    expect(both).toContain("/items/1");
    expect(both).toContain("/items/2");
    expect(both).toContain("/items/0");
    // Each request once, oldest last.
    expect(await table().getByRole("row").nth(8).textContent()).toContain("/items/0");
    await expect.poll(() => page.getByText("These are all the requests in the range.").count()).toBe(1);
    expect(await page.getByRole("button", { name: /^load older requests$/i }).count()).toBe(0);
  });
});
