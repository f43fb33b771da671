/**
 * local/console-static.ts: the built console's files at the API's origin, index.html for any other
 * path (the SPA fallback), never a path the API owns, never a file outside the directory.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { createServer, get, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consoleStatic, ownedByApi } from "#local/console-static.ts";

let server: Server;
let base: string;

beforeAll(async () => {
  const parent = mkdtempSync(join(tmpdir(), "console-static-"));
  const dist = join(parent, "dist");
  mkdirSync(join(dist, "assets"), { recursive: true });
  writeFileSync(join(dist, "index.html"), "<!doctype html><title>console</title>");
  writeFileSync(join(dist, "assets", "index-abc123.js"), "console.log(1)");
  writeFileSync(join(parent, "secret.txt"), "outside");
  writeFileSync(join(dist, ".build-stamp"), "stamp");
  const serve = consoleStatic(dist);
  if (!serve) throw new Error("no console");
  server = createServer(async (req, res) => {
    if (!(await serve(req, res, (req.url ?? "/").split("?")[0] ?? "/"))) {
      res.writeHead(404, { "Content-Type": "application/json" });
      res.end('{"message":"Route not found"}');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe("consoleStatic", () => {
  it("serves hashed assets immutable with their type, and index.html no-cache for other paths", async () => {
    const asset = await fetch(`${base}/assets/index-abc123.js`);
    expect(asset.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(asset.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    for (const path of ["/", "/settings/keys", "/invites/abc?x=1", "/assets/missing.js"]) {
      const page = await fetch(`${base}${path}`);
      expect(page.status, path).toBe(200);
      expect(await page.text()).toContain("<title>console</title>");
      expect(page.headers.get("cache-control")).toBe("no-cache");
      expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
      expect(page.headers.get("x-content-type-options")).toBe("nosniff");
    }
  });

  it("leaves the API's paths, other methods, dot files and paths outside the directory alone", async () => {
    for (const path of [
      "/api/x",
      "/auth/nothing",
      "/mcp",
      "/.well-known/x",
      "/oauth/x",
      "/openapi.json",
      "/docs",
      "/webhooks/stripe",
    ]) {
      expect((await fetch(`${base}${path}`)).status, path).toBe(404);
    }
    expect((await fetch(`${base}/settings`, { method: "POST" })).status).toBe(404);
    expect(await (await fetch(`${base}/.build-stamp`)).text()).toContain("<title>console</title>");
    // Sent as written (fetch would normalise the dot segments away).
    for (const path of ["/%2e%2e/secret.txt", "/../secret.txt", "/assets/..%2f..%2fsecret.txt"]) {
      const body = await new Promise<string>((resolve, reject) => {
        get({ host: "127.0.0.1", port: new URL(base).port, path }, (res) => {
          let text = "";
          res.on("data", (chunk) => {
            text += chunk;
          });
          res.on("end", () => resolve(text));
        }).on("error", reject);
      });
      expect(body, path).not.toContain("outside");
    }
  });

  it("knows the API's prefixes, not their look-alikes", () => {
    expect(ownedByApi("/api")).toBe(true);
    expect(ownedByApi("/docs")).toBe(true);
    expect(ownedByApi("/apikeys")).toBe(false);
    expect(ownedByApi("/documents")).toBe(false);
  });
});
