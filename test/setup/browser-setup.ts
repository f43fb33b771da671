/**
 * The browser tests' global setup: builds the web console when its sources changed since the last
 * build, and launches one Chromium (Debian's, CHROMIUM_PATH) that every browser test file connects
 * to (its WebSocket endpoint is provided as `browserWsEndpoint`).
 */
import { type BrowserServer, chromium } from "playwright-core";
import type { TestProject } from "vitest/node";
import { ensureConsoleBuilt } from "../../local/console-build.ts";

declare module "vitest" {
  export interface ProvidedContext {
    browserWsEndpoint: string;
  }
}

export default async function setup(project: TestProject) {
  await ensureConsoleBuilt();
  const executablePath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
  let server: BrowserServer;
  try {
    server = await chromium.launchServer({ executablePath, args: ["--no-sandbox"] });
  } catch (error) {
    throw new Error(
      `${executablePath} did not start (apt-get install chromium): ${(error as Error).message}`,
    );
  }
  project.provide("browserWsEndpoint", server.wsEndpoint());
  return async () => {
    await server.close();
  };
}
