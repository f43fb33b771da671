/**
 * A proxy's transforms in the console (issue 23), in the shared Chromium against the real local
 * stack: the empty lists, a response transform whose syntax error the API refuses (shown at its
 * line: a lint diagnostic in the editor and "Line 3: ..." beside it), the fixed code saved in the
 * editor changing the next response through the data plane, an edit that changes it again,
 * deactivate and activate, and a delete in its dialog. The proxy and its parts are set up through
 * the API; a loopback server is the target. Elements are found by role and label only; every page
 * state is checked with axe and saved as a screenshot.
 */
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

const REGION = "us-east-1";
const KEY = "console-transform-key-1234567890";

let browser: Browser;
let stack: TestStack;
let origin: string;
let context: BrowserContext;
let page: Page;
describePageOnFailure(() => page);
let user: TestUser;
let clientId: string;
let proxyId: string;
const servers: Server[] = [];

const heading = (name: string | RegExp) => page.getByRole("heading", { level: 1, name });
const shown = (locator: ReturnType<Page["getByText"]>) => expect.poll(() => locator.count()).toBe(1);
const transformsPath = () => `/organisations/${clientId}/proxies/${proxyId}/transforms`;
const responseTransforms = () =>
  user.api.get(`/api/clients/${clientId}/proxies/${proxyId}/response-transforms`);
/** The body of a call through the data plane (the target answers {"greeting": "hello"}). */
const answer = async (headers: Record<string, string> = { "x-reshape": "yes" }) => {
  const result = await callDataPlane(`${stack.regions[REGION]}/api/${proxyId}/hello`, {
    headers: { "x-api-key": KEY, ...headers },
  });
  expect(result.status, result.text).toBe(200);
  return JSON.parse(result.text) as Record<string, unknown>;
};
const editor = () => page.getByRole("textbox", { name: "Code (TypeScript or JavaScript)" });
/** Replaces the editor's whole text (inserted as one input, as a paste: no auto-closed brackets). */
async function typeCode(code: string) {
  await editor().click();
  await page.keyboard.press("ControlOrMeta+a");
  await page.keyboard.insertText(code);
}

const BROKEN = `// Adds a field to the answer
export default function (context, request, response) {
  const label = ;
  return response;
}
`;
const code = (value: string) => `// Adds a field to the answer
export default function (context: unknown, request: unknown, response: { body: Record<string, unknown> }) {
  return { ...response, body: { ...response.body, transformed: "${value}" } };
}
`;

beforeAll(async () => {
  ({ stack, origin } = await startConsoleStack());
  browser = await connectBrowser();
  ({ context, page, user } = await signedInConsole(browser, stack, origin));
  clientId = await newOrganisation(user);
  const targetBaseURL = await listenWithBody((_req, _body, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ greeting: "hello" }));
  }, servers);
  const parts = await createProxyParts(user, clientId, { region: REGION, key: KEY, targetBaseURL });
  proxyId = await createProxyOf(user, clientId, REGION, parts, "reshaped");
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

describe("transforms in the console", () => {
  it("shows both empty lists with a link back to the proxy", async () => {
    await page.goto(transformsPath());
    await expect.poll(() => heading("Transforms of reshaped").count()).toBe(1);
    expect(await page.getByRole("link", { name: "reshaped" }).getAttribute("href")).toBe(
      `/organisations/${clientId}/proxies/${proxyId}`,
    );
    await shown(page.getByText(/no request transforms yet/i));
    await shown(page.getByText(/no response transforms yet/i));
    await checkPage(page, "transforms-empty");
    expect(await answer()).toEqual({ greeting: "hello" });
  });

  it("shows a syntax error at its line: in the editor and as text beside it", async () => {
    await page.getByRole("link", { name: "Write the first response transform" }).click();
    await expect.poll(() => heading("New response transform").count()).toBe(1);
    await expect.poll(() => editor().count()).toBe(1);
    await checkPage(page, "transform-new");
    await typeCode(BROKEN);
    await page.getByRole("button", { name: "Create response transform" }).click();
    const problems = page.getByRole("list", { name: "Problems in the code" });
    await shown(problems.getByText(/^Line 3: syntax error: unexpected token/i));
    await shown(page.getByText(/transform code failed validation: 1 problem in the code/i));
    // The same problem as a lint diagnostic in the editor, listed in its diagnostics panel.
    const diagnostics = page.getByRole("listbox", { name: "Diagnostics" });
    await shown(diagnostics.getByRole("option", { name: /syntax error: unexpected token/i }));
    await checkPage(page, "transform-syntax-error");
    expect((await responseTransforms()).body.responseTransforms).toEqual([]);
  });

  it("saves a valid transform from the editor, and the next response is transformed", async () => {
    await typeCode(code("by the console"));
    await page.getByRole("button", { name: "Create response transform" }).click();
    await expect.poll(() => heading(/^edit response transform/i).count()).toBe(1);
    const stored = (await responseTransforms()).body.responseTransforms;
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ transformMode: "all", transformActive: true, priority: 0 });
    expect(await answer()).toEqual({ greeting: "hello", transformed: "by the console" });
    expect(await page.getByRole("list", { name: "Problems in the code" }).count()).toBe(0);
    await checkPage(page, "transform-edit");

    // An edit of the code and the priority: the next response shows the new code.
    await typeCode(code("edited"));
    await page.getByLabel("Priority").fill("7");
    await page.getByRole("button", { name: "Save response transform" }).click();
    await shown(page.getByText(/transform saved/i));
    expect(await answer()).toEqual({ greeting: "hello", transformed: "edited" });
    expect((await responseTransforms()).body.responseTransforms[0].priority).toBe(7);
    await checkPage(page, "transform-saved");

    // Conditional: only the requests with an x-reshape header.
    await page.getByLabel("Applies to").selectOption("conditional");
    await page.getByLabel("Effect of the conditions").selectOption("include");
    await page.getByRole("button", { name: "Add header conditions" }).click();
    await page.getByRole("group", { name: "Header conditions 1" }).getByLabel("Name").fill("x-reshape");
    await page.getByRole("button", { name: "Save response transform" }).click();
    await expect
      .poll(async () => (await responseTransforms()).body.responseTransforms[0].transformMode)
      .toBe("conditional");
    expect((await responseTransforms()).body.responseTransforms[0]).toMatchObject({
      effect: "include",
      headers: [{ name: "x-reshape" }],
      priority: 7,
    });
    expect(await answer({})).toEqual({ greeting: "hello" });
    expect(await answer()).toEqual({ greeting: "hello", transformed: "edited" });
    await checkPage(page, "transform-conditional");
  });

  it("deactivates, activates and deletes the transform from the list", async () => {
    await page.getByRole("link", { name: "Back to the transforms" }).click();
    await expect.poll(() => heading("Transforms of reshaped").count()).toBe(1);
    await shown(
      page.getByText(/^active; priority 7; conditional \(include the requests its conditions match\)/i),
    );
    await checkPage(page, "transforms-list");

    await page.getByRole("button", { name: /^deactivate response transform/i }).click();
    await shown(page.getByText(/is now inactive/i));
    await shown(page.getByText(/^inactive \(does not run\); priority 7/i));
    expect(await answer()).toEqual({ greeting: "hello" });
    await checkPage(page, "transforms-inactive");
    await page.getByRole("button", { name: /^activate response transform/i }).click();
    await shown(page.getByText(/is now active/i));
    expect(await answer()).toEqual({ greeting: "hello", transformed: "edited" });

    await page.getByRole("button", { name: /^delete response transform/i }).click();
    const dialog = page.getByRole("dialog", { name: /^delete response transform/i });
    await expect.poll(() => dialog.isVisible()).toBe(true);
    await shown(dialog.getByText(/its code go at once/i));
    await checkPage(page, "transform-delete-dialog");
    await dialog.getByRole("button", { name: "Delete transform" }).click();
    await shown(page.getByText(/no response transforms yet/i));
    expect((await responseTransforms()).body.responseTransforms).toEqual([]);
    expect(await answer()).toEqual({ greeting: "hello" });
    await checkPage(page, "transforms-deleted");
  });
});
