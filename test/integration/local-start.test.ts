/**
 * `npm start` as a new user meets it (issue 20, "the local stack"), with real processes:
 * - a port already in use gives one line naming the port and the setting that changes it, exit
 *   code 1, and no emulator left running (moto is found by a marker in its environment);
 * - the data plane's embedded metrics (a JSON line per request) are off under `npm start`
 *   (POWERTOOLS_METRICS_DISABLED=true), and on when asked for.
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyLocalDefaults, startFailureLine } from "#local/start.ts";

const ROOT = join(import.meta.dirname, "..", "..");
const TSX = join(ROOT, "node_modules", ".bin", "tsx");

function run(args: string[], env: Record<string, string>, timeoutMs = 60_000) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(TSX, args, {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`timed out: ${stderr}`));
    }, timeoutMs);
    child.once("error", reject);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Processes whose environment holds `marker` (Linux /proc). */
function processesWith(marker: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`, "latin1").includes(marker)) found.push(Number(entry));
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

let taken: Server;
let takenPort: number;
beforeAll(async () => {
  taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
  takenPort = (taken.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise((resolve) => taken.close(resolve));
});

describe("npm start with a port in use", () => {
  it("prints one line naming the port and PORT, exits 1, and leaves no emulator behind", async () => {
    const marker = `local-start-test-${randomUUID()}`;
    // The emulator npm start would start itself: no AWS_ENDPOINT_URL from the test run.
    const { code, stdout, stderr } = await run(["local/start.ts"], {
      PORT: String(takenPort),
      AWS_ENDPOINT_URL: "",
      LOCAL_START_TEST_MARKER: marker,
    });
    expect(code).toBe(1);
    expect(stderr.trim().split("\n")).toEqual([
      `Port ${takenPort} is already in use: stop what uses it, or choose another with PORT, e.g. PORT=${takenPort + 1} npm start`,
    ]);
    expect(stdout).not.toContain("Proxy gateway running locally");
    expect(processesWith(marker)).toEqual([]);
  });

  it("names DATA_PLANE_PORT for the data plane's port, and says what failed otherwise", () => {
    const settings = new Map([
      [3000, "PORT"],
      [3100, "DATA_PLANE_PORT"],
    ]);
    expect(startFailureLine({ code: "EADDRINUSE", port: 3100 }, settings)).toBe(
      "Port 3100 is already in use: stop what uses it, or choose another with DATA_PLANE_PORT, e.g. DATA_PLANE_PORT=3101 npm start",
    );
    expect(startFailureLine(new Error("no table"), settings)).toBe("npm start failed: no table");
  });
});

describe("the data plane's embedded metrics", () => {
  const publish = [
    "-e",
    '(async () => { const { publishRequestMetrics } = await import("./lib/data-plane/request-metrics.ts"); await publishRequestMetrics({ code: "proxy-access-granted", status: 200, meterRefused: false, transformError: false }); })()',
  ];

  it("are off by default under npm start, and a setting given wins", () => {
    const before = process.env.POWERTOOLS_METRICS_DISABLED;
    try {
      delete process.env.POWERTOOLS_METRICS_DISABLED;
      applyLocalDefaults();
      expect(process.env.POWERTOOLS_METRICS_DISABLED).toBe("true");
      process.env.POWERTOOLS_METRICS_DISABLED = "false";
      applyLocalDefaults();
      expect(process.env.POWERTOOLS_METRICS_DISABLED).toBe("false");
    } finally {
      if (before === undefined) delete process.env.POWERTOOLS_METRICS_DISABLED;
      else process.env.POWERTOOLS_METRICS_DISABLED = before;
    }
  });

  it("are off when POWERTOOLS_METRICS_DISABLED=true: nothing on stdout", async () => {
    const off = await run(publish, { LOG_LEVEL: "info", POWERTOOLS_METRICS_DISABLED: "true" });
    expect(off.code, off.stderr).toBe(0);
    expect(off.stdout).toBe("");
  });

  it("are written as EMF when on", async () => {
    const on = await run(publish, { LOG_LEVEL: "info", POWERTOOLS_METRICS_DISABLED: "false" });
    expect(on.code, on.stderr).toBe(0);
    expect(on.stdout).toContain('"CloudWatchMetrics"');
  });
});
