/**
 * A proxy's meters in the console (issue 23), in the shared Chromium against the real local stack:
 * the empty list, a create refused by the API (its message next to the field it names), a meter with
 * a limit of 3 per minute created through the page, four calls through the data plane (the 4th a
 * 429) and the usage bar at "3 of 3 this minute", an edit, and a delete in its dialog. The proxy
 * and its parts are set up through the API; a loopback server is the target. Elements are found by
 * role and label only; every page state is checked with axe and saved as a screenshot.
 */
import type { Server } from "node:http";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TestClock } from "../support/clock.ts";
import { listenWithBody } from "../support/loopback.ts";
import {
  callDataPlane,
  createProxyOf,
  createProxyParts,
  joinClient,
  startTestStack,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";
import {
  checkPage,
  connectBrowser,
  describePageOnFailure,
  newOrganisation,
  signedInConsole,
} from "./support.ts";

const REGION = "us-east-1";
const KEY = "console-meter-key-1234567890";

let browser: Browser;
let stack: TestStack;
let origin: string;
let context: BrowserContext;
let page: Page;
describePageOnFailure(() => page);
let user: TestUser;
let clientId: string;
let proxyId: string;
let meterId: string;
const servers: Server[] = [];
/** The stack's clock: the calls and the usage read happen in one fresh minute. */
const clock = new TestClock();

const heading = (name: string | RegExp) => page.getByRole("heading", { level: 1, name });
const shown = (locator: ReturnType<Page["getByText"]>) => expect.poll(() => locator.count()).toBe(1);
const metersPath = () => `/organisations/${clientId}/proxies/${proxyId}/meters`;
const call = () =>
  callDataPlane(`${stack.regions[REGION]}/api/${proxyId}/items`, { headers: { "x-api-key": KEY } });

beforeAll(async () => {
  stack = await startTestStack({ clock: clock.now });
  origin = `http://localhost:${new URL(stack.baseUrl).port}`;
  browser = await connectBrowser();
  ({ context, page, user } = await signedInConsole(browser, stack, origin));
  clientId = await newOrganisation(user);
  const targetBaseURL = await listenWithBody((_req, _body, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ ok: true }));
  }, servers);
  const parts = await createProxyParts(user, clientId, { region: REGION, key: KEY, targetBaseURL });
  proxyId = await createProxyOf(user, clientId, REGION, parts, "metered");
});
afterAll(async () => {
  await context?.close();
  await browser?.close();
  await stack?.stop();
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

describe("meters in the console", () => {
  it("shows the empty list with a link back to the proxy and to the first meter", async () => {
    await page.goto(metersPath());
    await expect.poll(() => heading("Meters of metered").count()).toBe(1);
    expect(await page.getByRole("link", { name: "metered" }).getAttribute("href")).toBe(
      `/organisations/${clientId}/proxies/${proxyId}`,
    );
    await shown(page.getByText(/this proxy has no meters yet/i));
    await checkPage(page, "meters-empty");
  });

  it("shows the API's refusal next to the field it names", async () => {
    await page.getByRole("link", { name: "Create its first meter" }).click();
    await expect.poll(() => heading("New meter").count()).toBe(1);
    await checkPage(page, "meter-new");
    // A response_value meter needs to know where its value is: the API names `extraction`.
    await page.getByLabel("Meter type").selectOption("response_value");
    await page.getByRole("button", { name: "Create meter" }).click();
    await shown(page.getByText(/error: is required when meterType is response_value/i));
    await checkPage(page, "meter-new-refused");
    expect((await user.api.get(`/api/clients/${clientId}/proxies/${proxyId}/meters`)).body.meters).toEqual(
      [],
    );
  });

  it("creates a meter with a limit of 3 a minute; after 4 calls the 4th was a 429 and the bar shows 3 of 3", async () => {
    await page.getByLabel("Meter type").selectOption("request_count");
    await page.getByLabel("Limit per minute").fill("3");
    await page.getByLabel("Notes").fill("Three a minute");
    await page.getByRole("button", { name: "Create meter" }).click();
    await expect.poll(() => heading("Meters of metered").count()).toBe(1);
    const listed = await user.api.get(`/api/clients/${clientId}/proxies/${proxyId}/meters`);
    expect(listed.body.meters).toHaveLength(1);
    expect(listed.body.meters[0]).toMatchObject({
      meterType: "request_count",
      meterActive: true,
      limits: { minute: 3 },
      notes: "Three a minute",
    });
    meterId = listed.body.meters[0].meterId;
    await shown(page.getByText("0 of 3 this minute"));
    await checkPage(page, "meters-list");

    // A fresh minute on the stack's clock, then four calls through the data plane.
    clock.toNextWindow();
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await call()).status);
    expect(statuses).toEqual([200, 200, 200, 429]);

    await page.getByRole("button", { name: /^refresh the usage of/i }).click();
    await shown(page.getByText(/^3 of 3 this minute/));
    const bar = page.getByRole("meter", { name: "Usage this minute" });
    expect(await bar.getAttribute("value")).toBe("3");
    expect(await bar.getAttribute("max")).toBe("3");
    expect(await bar.getAttribute("aria-valuetext")).toBe("3 of 3 this minute");
    // A meter with limits counts only its limited windows.
    expect(await page.getByText(/this hour/).count()).toBe(0);
    await checkPage(page, "meters-usage-full");
  });

  it("edits the meter: its limit and notes change, the rest stays", async () => {
    await page.getByRole("link", { name: /^edit request count meter/i }).click();
    await expect.poll(() => heading(/^edit request count meter/i).count()).toBe(1);
    expect(await page.getByLabel("Limit per minute").inputValue()).toBe("3");
    await checkPage(page, "meter-edit");
    await page.getByLabel("Limit per minute").fill("");
    await page.getByLabel("Limit per hour").fill("100");
    await page.getByLabel("Notes").fill("A hundred an hour");
    await page.getByRole("button", { name: "Save meter" }).click();
    await shown(page.getByText(/meter saved/i));
    const stored = await user.api.get(`/api/clients/${clientId}/proxies/${proxyId}/meters/${meterId}`);
    expect(stored.body.meters[0]).toMatchObject({
      meterType: "request_count",
      meterActive: true,
      limits: { hour: 100 },
      notes: "A hundred an hour",
    });
    expect(stored.body.meters[0].limits.minute).toBeUndefined();
    expect(await page.getByLabel("Limit per hour").inputValue()).toBe("100");
    await checkPage(page, "meter-edited");
    // The 5th call of the minute passes now: the minute limit is gone.
    expect((await call()).status).toBe(200);
  });

  it("deletes the meter in a dialog that says what goes", async () => {
    await page.getByRole("link", { name: "Back to the meters" }).click();
    await expect.poll(() => heading("Meters of metered").count()).toBe(1);
    // Only the call after the edit counted in the new hour window.
    await shown(page.getByText(/^1 of 100 this hour/));
    expect(await page.getByText(/this minute/).count()).toBe(0);
    await page.getByRole("button", { name: /^delete request count meter/i }).click();
    const dialog = page.getByRole("dialog", { name: /^delete request count meter/i });
    await expect.poll(() => dialog.isVisible()).toBe(true);
    await shown(dialog.getByText(/goes at once, with its counts/i));
    await checkPage(page, "meter-delete-dialog");
    await dialog.getByRole("button", { name: "Delete meter" }).click();
    await shown(page.getByText(/this proxy has no meters yet/i));
    await shown(page.getByText(/was deleted/i));
    expect((await user.api.get(`/api/clients/${clientId}/proxies/${proxyId}/meters`)).body.meters).toEqual(
      [],
    );
    await checkPage(page, "meters-deleted");
  });

  it("creates a meter with the whole field set: response value, conditions, per-caller limits and alerts", async () => {
    await page.getByRole("link", { name: "Create its first meter" }).click();
    await expect.poll(() => heading("New meter").count()).toBe(1);
    await page.getByLabel("Meter type").selectOption("response_value");
    await page.getByLabel("Taken from").selectOption("body");
    await page.getByLabel("Body path").fill("usage.tokens");
    await page.getByLabel("Default value").fill("2");
    await page.getByLabel("Limit per minute").fill("10");
    await page.getByLabel("Applies to").selectOption("conditional");
    await page.getByLabel("Effect of the conditions").selectOption("include");
    // Checkboxes once the document lists the methods (an enum), else one per line.
    const methods = page.getByRole("group", { name: /^HTTP methods/ });
    if ((await methods.count()) > 0) await methods.getByLabel("GET", { exact: true }).check();
    else await page.getByLabel("HTTP methods").fill("GET");
    await page.getByRole("button", { name: "Add header conditions" }).click();
    const header = page.getByRole("group", { name: "Header conditions 1" });
    await header.getByLabel("Name").fill("x-plan");
    await header.getByLabel("Pattern").fill("^gold$");
    await page.getByRole("button", { name: "Add variables" }).click();
    const variable = page.getByRole("group", { name: "Variables 1" });
    await variable.getByLabel("Name").fill("customer");
    await variable.getByLabel("Source").selectOption("header");
    await variable.getByLabel("Key").fill("x-customer");
    await page.getByLabel("Limit per caller by variable").fill("customer");
    await page.getByLabel("Alerts enabled").check();
    await page.getByLabel("Digest every").selectOption("hour");
    await page.getByLabel("Notify on").selectOption("threshold");
    await page.getByLabel("Alert threshold per minute").fill("4");
    await checkPage(page, "meter-new-full");
    await page.getByRole("button", { name: "Create meter" }).click();
    await expect.poll(() => heading("Meters of metered").count()).toBe(1);
    const listed = await user.api.get(`/api/clients/${clientId}/proxies/${proxyId}/meters`);
    expect(listed.body.meters).toHaveLength(1);
    expect(listed.body.meters[0]).toMatchObject({
      meterType: "response_value",
      meterActive: true,
      meterMode: "conditional",
      effect: "include",
      extraction: { location: "body", path: "usage.tokens", defaultValue: 2 },
      limits: { minute: 10 },
      methods: ["GET"],
      headers: [{ name: "x-plan", pattern: "^gold$" }],
      variables: [{ name: "customer", source: "header", key: "x-customer" }],
      limitBy: "customer",
      alerts: { enabled: true, cadence: "hour", notifyTrigger: "threshold", alertThreshold: { minute: 4 } },
    });

    // Two matching calls of one customer (the target's answer has no usage.tokens: 2 each), one
    // call that the condition leaves out.
    clock.toNextWindow();
    const gold = { "x-api-key": KEY, "x-plan": "gold", "x-customer": "alpha" };
    const url = `${stack.regions[REGION]}/api/${proxyId}/items`;
    for (const headers of [gold, gold, { "x-api-key": KEY, "x-customer": "alpha" }])
      expect((await callDataPlane(url, { headers })).status).toBe(200);
    await page.getByLabel("Counts of the caller whose customer is").fill("alpha");
    await page.getByRole("button", { name: "Show" }).click();
    // The value is settled after each answer: refresh until it is there.
    await expect
      .poll(async () => {
        await page.getByRole("button", { name: /^refresh the usage of/i }).click();
        return page.getByText(/^4 of 10 this minute/).count();
      })
      .toBe(1);
    expect(await page.getByRole("meter", { name: "Usage this minute" }).getAttribute("value")).toBe("4");
    await shown(
      page.getByText(
        /conditional \(include the requests its conditions match\); 10 per minute; per caller \(by customer\)/,
      ),
    );
    await checkPage(page, "meters-list-full");
  });

  it("shows a reader the meters and their usage without the controls their role would be refused", async () => {
    const reader = await signedInConsole(browser, stack, origin);
    try {
      await joinClient(user, clientId, reader.user, "reader");
      const view = reader.page;
      await view.goto(metersPath());
      await expect
        .poll(() => view.getByRole("heading", { level: 1, name: "Meters of metered" }).count())
        .toBe(1);
      await expect.poll(() => view.getByText(/your role can read these settings/i).count()).toBe(1);
      await expect.poll(() => view.getByRole("meter", { name: "Usage this minute" }).count()).toBe(1);
      expect(await view.getByRole("link", { name: "New meter" }).count()).toBe(0);
      expect(await view.getByRole("button", { name: /^delete/i }).count()).toBe(0);
      await checkPage(view, "meters-reader");
      await view.getByRole("link", { name: /^view response value meter/i }).click();
      await expect
        .poll(() => view.getByRole("heading", { level: 1, name: /^meter: response value meter/i }).count())
        .toBe(1);
      expect(await view.getByLabel("Limit per minute").isDisabled()).toBe(true);
      expect(await view.getByRole("button", { name: "Save meter" }).count()).toBe(0);
      await checkPage(view, "meter-reader");
    } finally {
      await reader.context.close();
    }
  });
});
