/**
 * The Targets pages (issue 23) in the shared Chromium against the real local stack: the empty
 * state; a target created through the form (the schema's required fields named first); the list;
 * its edit; the health check against a loopback server (through the credential test, with a
 * target credential of its region; a failing health path says so in words); and the deletion,
 * whose dialog names the proxy that goes with the target (set up through the API).
 */
import type { Server } from "node:http";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeOutboundAgents } from "#lib/net/outbound.ts";
import { listenWithBody } from "../support/loopback.ts";
import type { TestStack, TestUser } from "../support/stack.ts";
import {
  checkPage,
  connectBrowser,
  describePageOnFailure,
  newOrganisation,
  signedInConsole,
  startConsoleStack,
} from "./support.ts";

const US = "us-east-1";
const suffix = Math.random().toString(36).slice(2, 8);

let browser: Browser;
let stack: TestStack;
let origin: string;
let context: BrowserContext;
let page: Page;
describePageOnFailure(() => page);
let user: TestUser;
let clientId: string;
let upstream: string;
const servers: Server[] = [];
/** Paths the upstream server was asked for. */
const asked: string[] = [];

const heading = (name: string | RegExp) => page.getByRole("heading", { level: 1, name });
const shown = (locator: Locator) => expect.poll(() => locator.count()).toBeGreaterThan(0);
const exactly = (label: string) => new RegExp(`^${label}( \\(optional\\))?$`, "i");

async function setField(scope: Page | Locator, label: string, value: string): Promise<void> {
  const field = scope.getByLabel(exactly(label));
  if ((await field.evaluate((element) => element.tagName)) === "SELECT") await field.selectOption(value);
  else await field.fill(value);
}

beforeAll(async () => {
  ({ stack, origin } = await startConsoleStack());
  upstream = await listenWithBody((req, _body, res) => {
    asked.push(req.url ?? "");
    const healthy = req.url === "/v1/health";
    res.writeHead(healthy ? 200 : 503, { "content-type": "application/json" });
    res.end(JSON.stringify({ healthy }));
  }, servers);
  browser = await connectBrowser();
  ({ context, page, user } = await signedInConsole(browser, stack, origin));
  clientId = await newOrganisation(user);
});
afterAll(async () => {
  await context?.close();
  await browser?.close();
  for (const server of servers) server.close();
  await closeOutboundAgents();
  await stack?.stop();
});

describe("targets in the console", () => {
  let targetId: string;
  const name = `Orders API ${suffix}`;

  it("shows the empty state, then creates a target through the form", async () => {
    await page.goto(`/organisations/${clientId}/targets`);
    await expect.poll(() => heading("Targets").count()).toBe(1);
    await shown(page.getByText(/no targets yet/i));
    await checkPage(page, "targets-empty");
    await page.getByRole("link", { name: "Create a target" }).click();
    await expect.poll(() => heading("New target").count()).toBe(1);

    await page.getByRole("button", { name: "Create target" }).click();
    for (const label of ["Name", "Region", "Base URL", "Health-check path"])
      await expect.poll(() => page.getByLabel(exactly(label)).getAttribute("aria-invalid")).toBe("true");
    await checkPage(page, "target-new-errors");

    await setField(page, "Name", name);
    await setField(page, "Region", US);
    await setField(page, "Base URL", `${upstream}/v1`);
    await setField(page, "Health-check path", "/health");
    await page.getByRole("button", { name: "Create target" }).click();
    await expect.poll(() => heading(name).count()).toBe(1);
    targetId = decodeURIComponent(new URL(page.url()).pathname.split("/").at(-1) ?? "");
    const stored = await user.api.get(`/api/clients/${clientId}/targets/${targetId}`);
    expect(stored.body.targets[0]).toMatchObject({
      targetName: name,
      targetRegion: US,
      targetBaseURL: `${upstream}/v1`,
      targetTestPath: "/health",
    });
    // No credential yet: the health check says what to create, and links to it.
    await shown(page.getByRole("link", { name: "Create a target credential" }));
    await checkPage(page, "target");

    await page.getByRole("link", { name: "All targets" }).click();
    await expect.poll(() => heading("Targets").count()).toBe(1);
    await shown(page.getByRole("table", { name: /targets/i }).getByRole("link", { name }));
    await checkPage(page, "targets-list");
  });

  it("runs the health check with a target credential of its region", async () => {
    const credential = await user.api.post(`/api/clients/${clientId}/credentials`, {
      credentialName: `Open ${suffix}`,
      credentialType: "target",
      authType: "none",
      region: US,
      secret: {},
    });
    expect(credential.status, JSON.stringify(credential.body)).toBe(201);
    await page.goto(`/organisations/${clientId}/targets/${targetId}`);
    await expect.poll(() => heading(name).count()).toBe(1);
    await page.getByRole("button", { name: "Check health" }).click();
    await shown(
      page.getByRole("status").filter({ hasText: /^Healthy: the target answered 200 in \d+ ms\.$/ }),
    );
    expect(asked.at(-1)).toBe("/v1/health");
    await checkPage(page, "target-health");
  });

  it("edits it; a failing health path then reads 'Not healthy'", async () => {
    const form = page.getByRole("form", { name: "Edit" });
    await form.getByLabel(exactly("Health-check path")).fill("/status");
    await form.getByLabel(exactly("Notes")).fill("Owned by the orders team");
    await form.getByRole("button", { name: "Save" }).click();
    await shown(page.getByText("Target saved."));
    const stored = await user.api.get(`/api/clients/${clientId}/targets/${targetId}`);
    expect(stored.body.targets[0]).toMatchObject({
      targetTestPath: "/status",
      notes: "Owned by the orders team",
    });
    await shown(page.getByText("Owned by the orders team", { exact: true }));

    await page.getByRole("button", { name: "Check health" }).click();
    await shown(page.getByRole("status").filter({ hasText: /^Not healthy: the target answered 503/ }));
    expect(asked.at(-1)).toBe("/v1/status");
    await checkPage(page, "target-edited-unhealthy");
  });

  it("creates an access rule on the target's page", async () => {
    const form = page.getByRole("form", { name: "New rule" });
    await form.getByLabel(/^effect/i).selectOption("deny");
    await form.getByLabel(/^priority/i).fill("10");
    await form.getByLabel(/^path pattern/i).fill("^/admin");
    await form.getByRole("button", { name: "Create rule" }).click();
    await shown(page.getByText("Rule created."));
    const list = page.getByRole("list", { name: /rules of the target, in evaluation order/i });
    await expect.poll(() => list.getByRole("listitem").count()).toBe(1);
    expect(await list.getByRole("listitem").first().textContent()).toMatch(
      /^Priority 10: Deny every method, path matching \^\/admin/,
    );
    const stored = await user.api.get(`/api/clients/${clientId}/targets/${targetId}/rules`);
    expect(stored.body.rules).toEqual([expect.objectContaining({ effect: "deny", priority: 10 })]);
    await checkPage(page, "target-rules");
  });

  it("deletes it after a dialog that names the proxy going with it", async () => {
    const credentials = await user.api.get(`/api/clients/${clientId}/credentials`);
    const open = credentials.body.credentials[0].credentialId;
    const callers = await user.api.post(`/api/clients/${clientId}/credentials`, {
      credentialName: `Callers ${suffix}`,
      credentialType: "proxy",
      authType: "apiKey",
      region: US,
      secret: { keyName: "x-api-key", keyValue: `k-${suffix}-value` },
    });
    expect(callers.status, JSON.stringify(callers.body)).toBe(201);
    const proxy = await user.api.post(`/api/clients/${clientId}/proxies`, {
      proxyName: `Orders proxy ${suffix}`,
      proxyRegion: US,
      proxyProxyCredentialId: callers.body.credentials[0].credentialId,
      proxyTargetId: targetId,
      proxyTargetCredentialId: open,
    });
    expect(proxy.status, JSON.stringify(proxy.body)).toBe(201);
    const proxyId = proxy.body.proxies[0].proxyId;

    await page.reload();
    await expect.poll(() => heading(name).count()).toBe(1);
    await page.getByRole("button", { name: "Delete target" }).click();
    const dialog = page.getByRole("dialog", { name: `Delete ${name}?` });
    await shown(
      dialog
        .getByRole("list", { name: "Proxies deleted with it" })
        .getByText(`Orders proxy ${suffix} (${US})`),
    );
    await checkPage(page, "target-delete-dialog");
    // Cancel keeps it.
    await dialog.getByRole("button", { name: "Cancel" }).click();
    expect((await user.api.get(`/api/clients/${clientId}/targets/${targetId}`)).status).toBe(200);

    await page.getByRole("button", { name: "Delete target" }).click();
    await dialog.getByRole("button", { name: "Delete target" }).click();
    await expect.poll(() => heading("Targets").count()).toBe(1);
    await shown(page.getByText(/no targets yet/i));
    expect((await user.api.get(`/api/clients/${clientId}/targets/${targetId}`)).status).toBe(404);
    expect((await user.api.get(`/api/clients/${clientId}/proxies/${proxyId}`)).status).toBe(404);
  });
  it("pages the list, 20 at a time, newest first", async () => {
    for (let index = 1; index <= 21; index++) {
      const created = await user.api.post(`/api/clients/${clientId}/targets`, {
        targetName: `Paged ${String(index).padStart(2, "0")}`,
        targetRegion: US,
        targetBaseURL: `${upstream}/paged`,
        targetTestPath: "/health",
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
    }
    await page.goto(`/organisations/${clientId}/targets`);
    const table = page.getByRole("table", { name: /targets, newest first/i });
    await shown(table.getByRole("link", { name: "Paged 21" }));
    expect(await table.getByRole("link").count()).toBe(20);
    expect(await table.getByRole("link", { name: "Paged 01" }).count()).toBe(0);
    const pages = page.getByRole("navigation", { name: "Pages of targets" });
    await shown(pages.getByText("Page 1 of 2 (21 in all)"));
    expect(await pages.getByRole("button", { name: "Previous page" }).isDisabled()).toBe(true);
    await checkPage(page, "targets-paged");
    await pages.getByRole("button", { name: "Next page" }).click();
    await shown(pages.getByText("Page 2 of 2 (21 in all)"));
    await expect.poll(() => table.getByRole("link").count()).toBe(1);
    expect(await table.getByRole("link", { name: "Paged 01" }).count()).toBe(1);
  });
});
