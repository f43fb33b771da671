/**
 * Builds the web console (console/) into console/dist when its sources changed since the last build:
 * a hash of the sources is kept in console/dist/.build-stamp. Also measures the initial JavaScript
 * (the entry chunk and its static imports) gzipped, for the bundle budget (docs/console.md).
 */
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

export const CONSOLE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../console");
export const CONSOLE_DIST = join(CONSOLE_ROOT, "dist");
const STAMP = join(CONSOLE_DIST, ".build-stamp");
/** The budget of the console's initial JavaScript, gzipped (issue 22). */
export const INITIAL_JS_BUDGET_BYTES = 150 * 1024;

async function files(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const nested = await Promise.all(
    entries.map((entry) => {
      const path = join(dir, entry.name);
      return entry.isDirectory() ? files(path) : Promise.resolve([path]);
    }),
  );
  return nested.flat();
}

/** A hash of what the bundle is built from (the generated types only type-check, so they are left out). */
export async function consoleSourceHash(): Promise<string> {
  const hash = createHash("sha256");
  const sources = [
    ...(await files(join(CONSOLE_ROOT, "src"))).filter((path) => !path.endsWith(".d.ts")),
    join(CONSOLE_ROOT, "index.html"),
    join(CONSOLE_ROOT, "vite.config.ts"),
    resolve(CONSOLE_ROOT, "../package-lock.json"),
  ].sort();
  for (const path of sources) {
    hash.update(relative(CONSOLE_ROOT, path));
    hash.update(await readFile(path));
  }
  return hash.digest("hex");
}

export async function consoleIsBuilt(): Promise<boolean> {
  if (!existsSync(join(CONSOLE_DIST, "index.html"))) return false;
  const stamp = await readFile(STAMP, "utf8").catch(() => "");
  return stamp === (await consoleSourceHash());
}

/** Runs vite's build (and writes the stamp). */
export async function buildConsole(): Promise<void> {
  const { build } = await import("vite");
  // The production build whatever NODE_ENV the caller runs with (vitest sets "test", which gives
  // React's development build and a larger bundle).
  const nodeEnv = process.env.NODE_ENV;
  process.env.NODE_ENV = "production";
  try {
    await build({ configFile: join(CONSOLE_ROOT, "vite.config.ts"), logLevel: "warn", mode: "production" });
  } finally {
    if (nodeEnv === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = nodeEnv;
  }
  await writeFile(STAMP, await consoleSourceHash());
}

/** Builds the console unless console/dist is up to date; true when it built. */
export async function ensureConsoleBuilt(): Promise<boolean> {
  // The forms' schemas come from the registry: written first, so a changed operation rebuilds.
  const { writeApiTypes } = await import("../console/scripts/api-types.ts");
  await writeApiTypes();
  if (await consoleIsBuilt()) return false;
  await buildConsole();
  return true;
}

/** The initial JavaScript: the scripts index.html loads and the chunks they preload, gzipped. */
export async function initialJsSize(): Promise<{ files: string[]; bytes: number; gzipBytes: number }> {
  const html = await readFile(join(CONSOLE_DIST, "index.html"), "utf8");
  const paths = new Set<string>();
  for (const match of html.matchAll(
    /<(?:script[^>]*\ssrc|link[^>]*rel="modulepreload"[^>]*\shref)="([^"]+\.js)"/g,
  ))
    if (match[1]) paths.add(match[1]);
  let bytes = 0;
  let gzipBytes = 0;
  for (const path of paths) {
    const content = await readFile(join(CONSOLE_DIST, path.replace(/^\//, "")));
    bytes += content.length;
    gzipBytes += gzipSync(content, { level: 9 }).length;
  }
  return { files: [...paths], bytes, gzipBytes };
}

export function sizeLine(size: { bytes: number; gzipBytes: number }): string {
  const kib = (n: number) => (n / 1024).toFixed(1);
  return `console initial JS: ${kib(size.bytes)} KiB, ${kib(size.gzipBytes)} KiB gzipped (budget ${kib(INITIAL_JS_BUDGET_BYTES)} KiB)`;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const started = Date.now();
  await buildConsole();
  process.stdout.write(`console built into console/dist in ${Date.now() - started} ms\n`);
  process.stdout.write(`${sizeLine(await initialJsSize())}\n`);
}
