/**
 * A proxy's page (issue 23) in Chromium against the real local stack, with a loopback echo target
 * called through the data plane after each change:
 * - edit: a new name, an additional header and additional data (name/value rows), sent by the data
 *   plane on the next request;
 * - deactivate (after a dialog warning that live traffic stops): the data plane refuses with 403
 *   proxy-access-denied; activate: it serves again;
 * - rules: one created in the flat and one in the nested path form, listed by priority, the deny
 *   rule enforced, then deleted after a dialog;
 * - a filter (a required header: 400 without it) and a path override (a timeout), then removed;
 * - delete, after a dialog naming what goes with it: the URL stops answering.
 * Set-up (the proxy's parts) through the API; the flows under test through the page. Found by role
 * and label only; every state checked with axe and saved as a screenshot.
 */
import type { Server } from "node:http";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
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

const US = "us-east-1";
const KEY = `page-key-${Math.random().toString(36).slice(2, 12)}`;

let browser: Browser;
let stack: TestStack;
let context: BrowserContext;
let page: Page;
describePageOnFailure(() => page);
let user: TestUser;
let clientId: string;
let proxyId: string;
let proxyUrl: string;
const servers: Server[] = [];
const received: Array<{ method: string; url: string; headers: Record<string, unknown>; body: string }> = [];

const heading = (name: string | RegExp, level = 1) => page.getByRole("heading", { level, name });
const shown = (locator: Locator) => expect.poll(() => locator.count()).toBe(1);
const call = (path = "/items", init: RequestInit = {}) =>
  callDataPlane(`${proxyUrl.replace(/\/$/, "")}${path}`, {
    ...init,
    headers: { "x-api-key": KEY, ...(init.headers as Record<string, string>) },
  });
const proxyApi = () => `/api/clients/${clientId}/proxies/${proxyId}`;

beforeAll(async () => {
  let origin: string;
  ({ stack, origin } = await startConsoleStack());
  const targetBase = await listenWithBody((req, body, res) => {
    received.push({
      method: req.method ?? "",
      url: req.url ?? "",
      headers: req.headers,
      body: body.toString("utf8"),
    });
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ ok: true }));
  }, servers);
  browser = await connectBrowser();
  ({ context, page, user } = await signedInConsole(browser, stack, origin));
  clientId = await newOrganisation(user, "Proxy Page Co");
  const parts = await createProxyParts(user, clientId, { region: US, key: KEY, targetBaseURL: targetBase });
  proxyId = await createProxyOf(user, clientId, US, parts, "Orders API");
  proxyUrl = (await user.api.get(proxyApi())).body.proxies[0].proxyUrl;
});
afterAll(async () => {
  await context?.close();
  await browser?.close();
  for (const server of servers) await new Promise((resolve) => server.close(resolve));
  await stack?.stop();
});

describe("a proxy's page", () => {
  it("shows the proxy with links to its meters, transforms and telemetry", async () => {
    await page.goto(`/organisations/${clientId}/proxies`);
    await page.getByRole("list", { name: "Proxies" }).getByRole("link", { name: "Orders API" }).click();
    await shown(heading("Orders API"));
    const nav = page.getByRole("navigation", { name: "Proxy" });
    for (const [name, segment] of [
      ["Meters", "meters"],
      ["Transforms", "transforms"],
      ["Telemetry", "telemetry"],
    ])
      expect(await nav.getByRole("link", { name }).getAttribute("href")).toBe(
        `/organisations/${clientId}/proxies/${proxyId}/${segment}`,
      );
    await shown(page.getByText(/no rules yet/i));
    await checkPage(page, "proxy-page");
    expect((await call()).status).toBe(200);
  });

  it("edits the name, an additional header and additional data", async () => {
    const form = page.getByRole("form", { name: "Settings" });
    await form.getByLabel("Name (optional)", { exact: true }).fill("Orders API v2");
    const headers = form.getByRole("group", { name: /^additional headers/i });
    await headers.getByRole("button", { name: /add a row/i }).click();
    await headers.getByLabel("Name 1").fill("x-added");
    await headers.getByLabel("Value 1").fill("from-the-console");
    const data = form.getByRole("group", { name: /^additional data/i });
    await data.getByRole("button", { name: /add a row/i }).click();
    await data.getByLabel("Name 1").fill("source");
    await data.getByLabel("Value 1").fill("console");
    await checkPage(page, "proxy-edit");
    await form.getByRole("button", { name: "Save settings" }).click();
    await shown(heading("Orders API v2"));
    const stored = (await user.api.get(proxyApi())).body.proxies[0];
    expect(stored.proxyName).toBe("Orders API v2");
    expect(stored.proxyAdditionalHeaders).toEqual({ "x-added": "from-the-console" });
    expect(stored.proxyAdditionalData).toEqual({ source: "console" });

    // The data plane sends them on the next request.
    const answer = await call("/orders", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ id: 1 }),
    });
    expect(answer.status).toBe(200);
    const last = received.at(-1);
    expect(last?.headers["x-added"]).toBe("from-the-console");
    expect(JSON.parse(last?.body ?? "{}")).toEqual({ id: 1, source: "console" });
  });

  it("deactivates after a warning (the data plane refuses), then activates", async () => {
    await page.getByRole("button", { name: "Deactivate proxy" }).click();
    const dialog = page.getByRole("dialog", { name: "Deactivate Orders API v2?" });
    await shown(dialog.getByText(/live traffic through it stops immediately/i));
    await checkPage(page, "proxy-deactivate-dialog");
    await dialog.getByRole("button", { name: "Deactivate proxy" }).click();
    await shown(page.getByText("The proxy is deactivated."));
    await shown(page.getByRole("definition").filter({ hasText: /^Inactive/ }));
    const refused = await call();
    expect(refused.status).toBe(403);
    expect(refused.headers.get("service-proxy-code")).toBe("proxy-access-denied");
    await checkPage(page, "proxy-inactive");

    await page.getByRole("button", { name: "Activate proxy" }).click();
    await shown(page.getByText("The proxy is active again."));
    expect((await call()).status).toBe(200);
  });

  it("creates rules in the flat and the nested form, lists them by priority, and deletes one", async () => {
    // Flat: deny /blocked at priority 100.
    let form = page.getByRole("form", { name: "New rule" });
    await form.getByLabel(/^effect/i).selectOption("deny");
    await form.getByLabel(/^priority/i).fill("100");
    await form.getByLabel(/^path pattern/i).fill("^/blocked");
    await form.getByRole("button", { name: "Create rule" }).click();
    await shown(page.getByText("Rule created."));

    // Nested: allow /open at priority 500.
    await page.getByRole("radio", { name: /nested path object/i }).check();
    form = page.getByRole("form", { name: "New rule" });
    await form.getByLabel(/^effect/i).selectOption("allow");
    await form.getByLabel(/^priority/i).fill("500");
    await expect.poll(() => form.getByRole("group", { name: /^path/i }).count()).toBe(1);
    await form.getByLabel(/^path pattern/i).fill("^/open");
    // A pattern that does not compile is refused next to its field.
    await form.getByLabel(/^regular expression flags/i).fill("q");
    await form.getByRole("button", { name: "Create rule" }).click();
    await expect
      .poll(() => form.getByLabel(/^regular expression flags/i).getAttribute("aria-invalid"))
      .toBe("true");
    await form.getByLabel(/^regular expression flags/i).fill("");
    await form.getByRole("button", { name: "Create rule" }).click();
    await shown(page.getByText("Rule created."));

    const list = page.getByRole("list", { name: /rules of the proxy, in evaluation order/i });
    await expect.poll(() => list.getByRole("listitem").count()).toBe(2);
    const items = await list.getByRole("listitem").allTextContents();
    expect(items[0]).toMatch(/^Priority 500: Allow every method, path matching \^\/open/);
    expect(items[1]).toMatch(/^Priority 100: Deny every method, path matching \^\/blocked/);
    const stored = (await user.api.get(`${proxyApi()}/rules`)).body.rules;
    expect(stored.map((rule: { priority: number }) => rule.priority)).toEqual([500, 100]);
    expect(stored[1]).toMatchObject({
      pathPattern: "^/blocked",
      path: { pattern: "^/blocked", presence: "present" },
    });
    await checkPage(page, "proxy-rules");

    expect((await call("/blocked")).status).toBe(403);
    expect((await call("/open")).status).toBe(200);

    await page.getByRole("button", { name: "Delete the rule of priority 100" }).click();
    const dialog = page.getByRole("dialog", { name: "Delete the rule of priority 100?" });
    await shown(dialog.getByText(/deny every method, path matching/i));
    await checkPage(page, "proxy-rule-delete-dialog");
    await dialog.getByRole("button", { name: "Delete rule" }).click();
    await shown(page.getByText("The rule of priority 100 was deleted."));
    await expect.poll(() => list.getByRole("listitem").count()).toBe(1);
    expect((await call("/blocked")).status).toBe(200);
  });

  it("sets a filter and a path override, then removes them", async () => {
    await page.getByRole("button", { name: "Add a filter" }).click();
    const filters = page.getByRole("form", { name: "Edit filters" });
    await filters.getByLabel(/^required headers/i).fill("x-tenant");
    await checkPage(page, "proxy-filters-edit");
    await filters.getByRole("button", { name: "Save filters" }).click();
    const set = page.getByRole("definition").filter({ hasText: "x-tenant" });
    await shown(set);
    expect((await user.api.get(`${proxyApi()}/filters`)).body.filters[0].requiredHeaders).toEqual([
      "x-tenant",
    ]);
    expect((await call()).status).toBe(400);
    expect((await call("/items", { headers: { "x-tenant": "t1" } })).status).toBe(200);

    await page.getByRole("button", { name: "Add a path override" }).click();
    const overrides = page.getByRole("form", { name: "Edit path overrides" });
    await overrides.getByLabel(/^path prefix/i).fill("/reports");
    await overrides.getByLabel(/^timeout seconds/i).fill("5");
    await overrides.getByRole("button", { name: "Save path overrides" }).click();
    const overrideList = page.getByRole("list", { name: "Path overrides of the proxy" });
    await shown(overrideList.getByText("/reports"));
    expect((await user.api.get(`${proxyApi()}/overrides`)).body.overrides[0].pathOverrides).toEqual([
      { pathPrefix: "/reports", timeoutSeconds: 5 },
    ]);
    await checkPage(page, "proxy-filters-overrides");

    await page.getByRole("button", { name: "Remove all filters" }).click();
    const dialog = page.getByRole("dialog", { name: /remove every filter/i });
    await dialog.getByRole("button", { name: "Remove all filters" }).click();
    await shown(page.getByText("Every filter was removed."));
    await shown(page.getByText(/no filters: every caller and header passes/i));
    expect((await call()).status).toBe(200);

    await page.getByRole("button", { name: "Remove all path overrides" }).click();
    await page
      .getByRole("dialog", { name: /remove every path override/i })
      .getByRole("button", { name: "Remove all path overrides" })
      .click();
    await shown(page.getByText(/no path overrides/i));
    expect((await user.api.get(`${proxyApi()}/overrides`)).body.overrides[0].pathOverrides).toEqual([]);
  });

  it("pages the rules, 20 at a time, in evaluation order", async () => {
    // One rule (priority 500) is left from above; 20 more, priorities 0 to 19.
    for (let priority = 0; priority < 20; priority++) {
      const created = await user.api.post(`${proxyApi()}/rules`, { effect: "allow", priority });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
    }
    await page.reload();
    const list = page.getByRole("list", { name: /rules of the proxy, in evaluation order/i });
    await expect.poll(() => list.getByRole("listitem").count()).toBe(20);
    const pager = page.getByRole("navigation", { name: "Pages of rules" });
    await shown(pager.getByText("Page 1 of 2 (21 in all)"));
    expect(await list.getByRole("listitem").first().textContent()).toMatch(/^Priority 500:/);
    await checkPage(page, "proxy-rules-paged");
    await pager.getByRole("button", { name: "Next page" }).click();
    await shown(pager.getByText("Page 2 of 2 (21 in all)"));
    await expect.poll(() => list.getByRole("listitem").count()).toBe(1);
    expect(await list.getByRole("listitem").first().textContent()).toMatch(/^Priority 0:/);
  });

  it("deletes the proxy after a dialog naming what goes with it", async () => {
    await page.getByRole("button", { name: "Delete proxy" }).click();
    const dialog = page.getByRole("dialog", { name: "Delete Orders API v2?" });
    await shown(dialog.getByText(/its rules, meters .* go with it/i));
    await checkPage(page, "proxy-delete-dialog");
    await dialog.getByRole("button", { name: "Delete proxy" }).click();
    await shown(heading("Proxies"));
    await shown(page.getByRole("link", { name: "Create your first proxy" }));
    expect((await user.api.get(proxyApi())).status).toBe(404);
    expect((await call()).status).toBe(403);
  });
});
