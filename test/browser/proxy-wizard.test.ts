/**
 * The "New proxy" wizard (issue 23) in Chromium against the real local stack: from an empty
 * organisation, through the empty list's link, the region, a new target (a loopback echo server), a
 * new apiKey proxy credential, a new `none` target credential and the proxy, to a test call that
 * answers 200 with `service-proxy-code: proxy-access-granted`; the curl command carries the key typed
 * in this session, and a call through the data plane as that command sends it answers 200 from the
 * echo target. Then the regional rule: a second run offers the target only in its own region.
 * Found by role and label only; every step is checked with axe and saved as a screenshot (the last
 * one also as docs/images/console-proxy-wizard.png, shown by the README, with UPDATE_DOCS_IMAGES=1).
 */
import { copyFile, mkdir } from "node:fs/promises";
import type { Server } from "node:http";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listenWithBody } from "../support/loopback.ts";
import { callDataPlane, type TestStack, type TestUser } from "../support/stack.ts";
import {
  checkPage,
  connectBrowser,
  describePageOnFailure,
  newOrganisation,
  SCREENSHOTS,
  signedInConsole,
  startConsoleStack,
} from "./support.ts";

const US = "us-east-1";
const EU = "eu-west-1";
const KEY = `wizard-key-${Math.random().toString(36).slice(2, 12)}`;

let browser: Browser;
let stack: TestStack;
let context: BrowserContext;
let page: Page;
describePageOnFailure(() => page);
let user: TestUser;
let clientId: string;
let targetBase: string;
const servers: Server[] = [];
/** What the echo target received, newest last. */
const received: Array<{ method: string; url: string; headers: Record<string, unknown> }> = [];

const heading = (name: string | RegExp, level = 1) => page.getByRole("heading", { level, name });
const shown = (locator: Locator) => expect.poll(() => locator.count()).toBe(1);

/** A field that is a select when the schema lists its values, else a text field. */
async function choose(scope: Page | Locator, name: RegExp, value: string) {
  const field = scope.getByRole("combobox", { name }).or(scope.getByRole("textbox", { name }));
  if ((await field.evaluate((element) => element.tagName)) === "SELECT") await field.selectOption(value);
  else await field.fill(value);
}

/** The secret: the fields of its auth type when the schema names them, else its JSON. */
async function fillSecret(form: Locator, fields: Record<string, string>) {
  const first = Object.keys(fields)[0];
  const named = first ? form.getByLabel(new RegExp(`^${first.replace(/([A-Z])/g, " $1")}`, "i")) : null;
  if (named && (await named.count()) === 1) {
    for (const [name, value] of Object.entries(fields))
      await form.getByLabel(new RegExp(`^${name.replace(/([A-Z])/g, " $1")}`, "i")).fill(value);
    return;
  }
  await form.getByLabel(/^secret/i).fill(JSON.stringify(fields));
}

beforeAll(async () => {
  let origin: string;
  ({ stack, origin } = await startConsoleStack());
  targetBase = await listenWithBody((req, _body, res) => {
    received.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers });
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ echo: req.url, method: req.method }));
  }, servers);
  browser = await connectBrowser();
  ({ context, page, user } = await signedInConsole(browser, stack, origin));
  clientId = await newOrganisation(user, "Wizard Co");
});
afterAll(async () => {
  await context?.close();
  await browser?.close();
  for (const server of servers) await new Promise((resolve) => server.close(resolve));
  await stack?.stop();
});

describe("the new proxy wizard", () => {
  let proxyUrl: string;

  it("goes from an empty organisation to a 200 through the data plane", async () => {
    await page.goto(`/organisations/${clientId}/proxies`);
    await shown(heading("Proxies"));
    await shown(page.getByText(/no proxies yet/i));
    await checkPage(page, "proxies-empty");
    await page.getByRole("link", { name: /create your first proxy/i }).click();
    await shown(heading("New proxy"));

    // 1. The region.
    await choose(page, /^region/i, US);
    await checkPage(page, "proxy-wizard-region");
    await page.getByRole("button", { name: /^continue$/i }).click();

    // 2. The target: none in the region yet, so a new one.
    await shown(heading("Target", 2));
    await shown(page.getByText(`No target in ${US} yet: create one here.`));
    const targetForm = page.getByRole("form", { name: "New target" });
    // A base URL the API refuses is shown next to its field.
    await targetForm.getByLabel(/^name/i).fill("Echo");
    await targetForm.getByLabel(/^base url/i).fill("not a url");
    await targetForm.getByRole("button", { name: "Create target" }).click();
    await expect.poll(() => targetForm.getByLabel(/^base url/i).getAttribute("aria-invalid")).toBe("true");
    await checkPage(page, "proxy-wizard-target-error");
    await targetForm.getByLabel(/^base url/i).fill(targetBase);
    await targetForm.getByRole("button", { name: "Create target" }).click();

    // 3. The proxy credential: an apiKey.
    await shown(heading("Proxy credential", 2));
    const callerForm = page.getByRole("form", { name: "New proxy credential" });
    await callerForm.getByLabel(/^name/i).fill("Caller key");
    await choose(callerForm, /^auth type/i, "apiKey");
    await fillSecret(callerForm, { keyName: "x-api-key", keyValue: KEY });
    await checkPage(page, "proxy-wizard-proxy-credential");
    await callerForm.getByRole("button", { name: "Create proxy credential" }).click();

    // 4. The target credential: none.
    await shown(heading("Target credential", 2));
    const upstreamForm = page.getByRole("form", { name: "New target credential" });
    await upstreamForm.getByLabel(/^name/i).fill("Open upstream");
    await choose(upstreamForm, /^auth type/i, "none");
    await checkPage(page, "proxy-wizard-target-credential");
    await upstreamForm.getByRole("button", { name: "Create target credential" }).click();

    // 5. The proxy.
    await shown(heading("The proxy", 2));
    const proxyForm = page.getByRole("form", { name: "The proxy" });
    await proxyForm.getByLabel(/^name/i).fill("Echo proxy");
    await checkPage(page, "proxy-wizard-proxy");
    await proxyForm.getByRole("button", { name: "Create proxy" }).click();

    // 6. The URL, the curl command (with the key typed above, this once), and the test call.
    await shown(heading("Your proxy is ready", 2));
    const listed = await user.api.get(`/api/clients/${clientId}/proxies`);
    expect(listed.body.proxies).toHaveLength(1);
    const proxy = listed.body.proxies[0];
    expect(proxy).toMatchObject({ proxyName: "Echo proxy", proxyRegion: US, proxyActive: true });
    proxyUrl = proxy.proxyUrl;
    expect(proxyUrl).toMatch(/^http/);
    await shown(page.getByRole("definition").filter({ hasText: proxyUrl }));
    const curl = await page.getByLabel("Curl command").inputValue();
    expect(curl).toBe(`curl -H 'x-api-key: ${KEY}' '${proxyUrl.replace(/\/$/, "")}/'`);

    const before = received.length;
    await page.getByRole("button", { name: "Send a test call" }).click();
    const result = page.getByRole("status").filter({ hasText: /^Status/ });
    await expect
      .poll(() => result.textContent())
      .toMatch(/Status 200, service-proxy-code proxy-access-granted/);
    expect(received.length).toBe(before + 1);
    expect(received.at(-1)?.url).toBe("/");
    await checkPage(page, "proxy-wizard-done");
    // The README's image, rewritten only when asked (a test run leaves the tree as it was).
    if (process.env.UPDATE_DOCS_IMAGES) {
      await mkdir("docs/images", { recursive: true });
      await copyFile(`${SCREENSHOTS}/proxy-wizard-done.png`, "docs/images/console-proxy-wizard.png");
    }

    // The curl command's call, through the data plane: the echo target answers.
    const answer = await callDataPlane(`${proxyUrl.replace(/\/$/, "")}/hello?x=1`, {
      headers: { "x-api-key": KEY },
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("service-proxy-code")).toBe("proxy-access-granted");
    expect(JSON.parse(answer.text)).toEqual({ echo: "/hello?x=1", method: "GET" });
    // Without the key the data plane refuses.
    const refused = await callDataPlane(`${proxyUrl.replace(/\/$/, "")}/hello`);
    expect(refused.status).toBe(403);

    // The list now shows it, by name, with a link to its page.
    await page.getByRole("link", { name: "go to all proxies" }).click();
    await shown(heading("Proxies"));
    const list = page.getByRole("list", { name: "Proxies" });
    await shown(list.getByRole("link", { name: "Echo proxy" }));
    await checkPage(page, "proxies-list");
  }, 120_000);

  it("offers only the resources of the chosen region (the regional rule)", async () => {
    await page.getByRole("link", { name: "New proxy" }).click();
    await shown(heading("New proxy"));
    await choose(page, /^region/i, EU);
    await page.getByRole("button", { name: /^continue$/i }).click();
    // The us-east-1 target is not offered in eu-west-1.
    await shown(page.getByText(`No target in ${EU} yet: create one here.`));
    expect(await page.getByRole("radio", { name: /use an existing target/i }).count()).toBe(0);
    await checkPage(page, "proxy-wizard-other-region");

    await page.getByRole("button", { name: /back to region/i }).click();
    await choose(page, /^region/i, US);
    await page.getByRole("button", { name: /^continue$/i }).click();
    await shown(page.getByRole("radio", { name: `Use an existing target of ${US}` }));
    const existing = page.getByRole("form", { name: "Existing target" });
    const options = await existing.getByRole("option").allTextContents();
    expect(options).toEqual([`Echo (${targetBase})`]);
    await existing.getByRole("button", { name: "Use this target" }).click();
    // The proxy credentials offered are those of us-east-1 of the proxy type only.
    await shown(heading("Proxy credential", 2));
    const callers = await page
      .getByRole("form", { name: "Existing proxy credential" })
      .getByRole("option")
      .allTextContents();
    expect(callers).toEqual(["Caller key (apiKey)"]);
    await checkPage(page, "proxy-wizard-existing");
  }, 60_000);
});
