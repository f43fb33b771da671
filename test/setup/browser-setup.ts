/**
 * The browser tests' global setup: builds the web console when its sources changed since the last
 * build, and launches one Chromium that every browser test file connects to (its WebSocket endpoint
 * is provided as `browserWsEndpoint`).
 * (which Chromium: test/support/chromium.ts).
 */
import { type BrowserServer, chromium } from "playwright-core";
import type { TestProject } from "vitest/node";
import { ensureConsoleBuilt } from "../../local/console-build.ts";
import { CHROMIUM_ARGS, chromiumEnv, chromiumExecutable } from "../support/chromium.ts";

declare module "vitest" {
  export interface ProvidedContext {
    browserWsEndpoint: string;
  }
}

export default async function setup(project: TestProject) {
  await ensureConsoleBuilt();
  const { path, source } = await chromiumExecutable();
  let server: BrowserServer;
  try {
    server = await chromium.launchServer({ executablePath: path, args: CHROMIUM_ARGS, env: chromiumEnv() });
  } catch (error) {
    throw new Error(`Chromium at ${path} (${source}) did not start: ${(error as Error).message}`);
  }
  project.provide("browserWsEndpoint", server.wsEndpoint());
  return async () => {
    await server.close();
  };
}
