/**
 * The API's documentation as a person and a tool reach it, over real HTTP against the local stack:
 * `GET /openapi.json` and `GET /docs` without a token, and the reference page rendered by a real
 * headless Chromium (Debian's `chromium`, driven by playwright-core), which must show the
 * registry's operations while loading nothing from anywhere but the page itself.
 *
 * The browser test launches the Chromium of test/support/chromium.ts (CHROMIUM_PATH, the system's,
 * or the one shipped in an npm package). If it does not start, the test fails, saying so: it never
 * skips.
 */
import { compileErrors, validate } from "@readme/openapi-parser";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openApiDocument } from "#lib/api/openapi.ts";
import { OPERATIONS } from "#lib/api/registry.ts";
import { getConfig } from "#lib/config.ts";
import { CHROMIUM_ARGS, chromiumEnv, chromiumExecutable } from "../support/chromium.ts";
import { startTestStack, type TestStack } from "../support/stack.ts";

let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack?.stop();
});

describe("GET /openapi.json", () => {
  it("answers the registry's OpenAPI document without a token, and it validates", async () => {
    const response = await fetch(`${stack.baseUrl}/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    const document = (await response.json()) as Record<string, unknown>;
    // As built for this deployment: its configured regions listed as the region fields' enum.
    expect(document).toEqual(
      JSON.parse(JSON.stringify(openApiDocument(OPERATIONS, { regions: getConfig().regions }))),
    );
    const result = await validate(structuredClone(document) as never);
    expect(result.valid, result.valid ? "" : compileErrors(result)).toBe(true);
  });

  it("ignores a token, and refuses other methods", async () => {
    const withToken = await fetch(`${stack.baseUrl}/openapi.json`, { headers: { Authorization: "u-nope" } });
    expect(withToken.status).toBe(200);
    const post = await fetch(`${stack.baseUrl}/openapi.json`, { method: "POST" });
    expect(post.status).toBeGreaterThanOrEqual(400);
    expect(post.status).toBeLessThan(500);
  });
});

describe("GET /docs", () => {
  it("answers a self-contained HTML page that names no other origin", async () => {
    const response = await fetch(`${stack.baseUrl}/docs`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const policy = response.headers.get("content-security-policy") ?? "";
    expect(policy).toContain("default-src 'none'");
    expect(policy).not.toMatch(/https?:/);
    const html = await response.text();
    expect(html).toMatch(/^<!doctype html>/);
    // No element loads anything: no src, no stylesheet link.
    expect(html).not.toMatch(/<script[^>]+src=/i);
    expect(html).not.toMatch(/<link[^>]+href=/i);
  });

  describe("in headless Chromium", () => {
    let browser: Browser | undefined;
    let launchError: string | undefined;

    beforeAll(async () => {
      const { path, source } = await chromiumExecutable();
      try {
        browser = await chromium.launch({ executablePath: path, args: CHROMIUM_ARGS, env: chromiumEnv() });
      } catch (error) {
        launchError = `${path} (${source}) did not start: ${(error as Error).message.split("\n")[0]}`;
      }
    });
    afterAll(async () => {
      await browser?.close();
    });

    it("renders every operation and loads nothing from elsewhere", async () => {
      if (!browser)
        throw new Error(
          `This test needs Chromium: ${launchError}. It runs CHROMIUM_PATH, /usr/bin/chromium, ` +
            "or the one of the @sparticuz/chromium devDependency (npm ci installs it).",
        );
      const page = await browser.newPage();
      const pageUrl = `${stack.baseUrl}/docs`;
      const elsewhere: string[] = [];
      const problems: string[] = [];
      // Every request the page makes is seen here; only the page itself goes to the network.
      await page.route("**/*", (route) => {
        const url = route.request().url();
        if (url === pageUrl || /^(blob|data):/.test(url)) return route.continue();
        elsewhere.push(url);
        return route.abort();
      });
      page.on("console", (message) => {
        if (message.type() === "error") problems.push(message.text());
      });
      page.on("pageerror", (error) => problems.push(error.message));

      const response = await page.goto(pageUrl, { waitUntil: "load" });
      expect(response?.status()).toBe(200);
      // Redoc gives each operation a section headed by its summary, with its method and path.
      for (const operation of OPERATIONS) {
        const heading = page.locator("h2").filter({ hasText: operation.summary }).first();
        await expect.poll(() => heading.count(), { timeout: 20_000 }).toBeGreaterThan(0);
        await heading.scrollIntoViewIfNeeded();
        expect(await heading.isVisible(), operation.summary).toBe(true);
      }
      for (const path of new Set(OPERATIONS.map((operation) => operation.path))) {
        expect(await page.getByText(path, { exact: true }).count(), path).toBeGreaterThan(0);
      }
      expect(await page.title()).toContain("reference");
      // The security scheme of spec 5.1 is shown.
      expect(await page.getByText("userToken").count()).toBeGreaterThan(0);
      expect(elsewhere).toEqual([]);
      expect(problems).toEqual([]);
      await page.close();
      // Up to about 0.7 s per operation on a loaded 2-core machine (56-60 s for 83 and for 92
      // operations): room for the registry to grow.
    }, 120_000);
  });
});
