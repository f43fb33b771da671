/**
 * `npm start` as a new user meets it (issue 20, "the local stack"), with real processes:
 * - a port already in use gives one line naming the port and the setting that changes it, exit
 *   code 1, and no emulator left running (moto is found by a marker in its environment);
 * - the data plane's embedded metrics (a JSON line per request) are off under `npm start`
 *   (POWERTOOLS_METRICS_DISABLED=true), and on when asked for;
 * - its terminal (docs/local-runner.md): idle, nothing but what LOG_LEVEL=debug adds, while the scheduled
 *   functions run several times; one line per change made through the Core API; Ctrl-C stops
 *   everything, the emulator last, exit 0, without an error line.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SCHEDULED_FUNCTIONS } from "#lib/infra/api-manifest.ts";
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

interface Line {
  stream: "stdout" | "stderr";
  text: string;
}

/** The process group of a process (Linux /proc: the fifth field of its stat line). */
function processGroupOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
  // The command (second field) is in parentheses and may hold spaces: count from its end.
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]);
}

/** The level of a JSON log line, or undefined for any other line. */
function levelOf(line: Line): string | undefined {
  try {
    const parsed = JSON.parse(line.text) as { level?: unknown };
    return typeof parsed.level === "string" ? parsed.level : undefined;
  } catch {
    return undefined;
  }
}

/** What the terminal shows at npm start's default level: every line but the debug ones. */
const shownByDefault = (lines: Line[]) => lines.filter((line) => levelOf(line) !== "debug");

/** Polls `condition` until it holds; fails with `what` (and the output so far) at the deadline. */
async function until(condition: () => boolean, what: string, output: Line[], deadlineMs: number) {
  const deadline = Date.now() + deadlineMs;
  while (!condition()) {
    if (Date.now() > deadline)
      throw new Error(
        `${what}: not within ${deadlineMs} ms. Output:\n${output.map((l) => `${l.stream}: ${l.text}`).join("\n")}`,
      );
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The environment without this test file's stack settings (test/setup/file-env.ts): npm start's defaults. */
function asNewUser(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const clean = { ...env };
  for (const name of ["TABLE_NAME", "KMS_KEY_ALIAS", "HOME_REGION", "REGIONS", "EMAIL_SENDER", "APP_URL"])
    delete clean[name];
  return clean;
}

describe("npm start's terminal: idle, a change, Ctrl-C", () => {
  const SCHEDULED = Object.values(SCHEDULED_FUNCTIONS).map((scheduled) => scheduled.name);
  let dir: string;
  let child: ChildProcess | undefined;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "local-terminal-"));
  });
  afterAll(() => {
    // Only if the test failed before its own Ctrl-C: the whole group, so nothing is left behind.
    if (child?.pid && child.exitCode === null && child.signalCode === null)
      process.kill(-child.pid, "SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it("prints nothing but debug lines while the schedules run, a line per change, and stops on Ctrl-C with exit 0 and no error line", {
    timeout: 120_000,
  }, async () => {
    const marker = `local-terminal-test-${randomUUID()}`;
    const stackFile = join(dir, "stack.json");
    // `npm start` runs `tsx local/start.ts`; its own process group, as a terminal's foreground job.
    child = spawn(TSX, ["local/start.ts"], {
      cwd: ROOT,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: {
        ...asNewUser(process.env),
        AWS_ENDPOINT_URL: "", // npm start starts its own moto, and stops it on Ctrl-C
        PORT: "0",
        DATA_PLANE_PORT: "0",
        LOCAL_STACK_FILE: stackFile,
        LOCAL_CONSOLE: "false",
        // Every scheduled function every 200 ms: the runs of idle minutes, in seconds.
        LOCAL_SCHEDULE_PERIOD_MS: "200",
        // Debug shows the runs; what the default level (warn) shows is every other line.
        LOG_LEVEL: "debug",
        LOCAL_START_TEST_MARKER: marker,
      },
    });
    const output: Line[] = [];
    for (const stream of ["stdout", "stderr"] as const)
      createInterface({ input: child[stream]! }).on("line", (text) => output.push({ stream, text }));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child!.once("exit", (code, signal) => resolve({ code, signal })),
    );

    await until(
      () => output.some((l) => l.text.includes("Ctrl-C stops everything")),
      "ready",
      output,
      60_000,
    );
    const ready = output.length;
    const idle = () => output.slice(ready);
    const runsOf = (name: string) =>
      idle().filter(
        (l) =>
          levelOf(l) === "debug" &&
          l.text.includes('"Scheduled function ran"') &&
          l.text.includes(`"function":"${name}"`),
      ).length;
    await until(
      () => SCHEDULED.every((name) => runsOf(name) >= 3),
      "three runs of each scheduled function",
      output,
      60_000,
    );

    // Idle: the scheduled functions ran, and a person at the default level saw nothing of it.
    expect(shownByDefault(idle())).toEqual([]);

    // A read prints nothing; a change (here a failed sign-in) prints one line, without ids.
    const { baseUrl, token } = JSON.parse(readFileSync(stackFile, "utf8")) as {
      baseUrl: string;
      token: string;
    };
    const api = baseUrl.replace("localhost", "127.0.0.1");
    const beforeRequests = output.length;
    expect((await fetch(`${api}/api/users`, { headers: { Authorization: token } })).status).toBe(200);
    const signIn = await fetch(`${api}/auth/sign-in`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "local-admin@localhost.localdomain", password: "not the password" }),
    });
    await until(
      () => shownByDefault(output.slice(beforeRequests)).length > 0,
      "the sign-in's line",
      output,
      10_000,
    );
    expect(shownByDefault(output.slice(beforeRequests))).toEqual([
      {
        stream: "stdout",
        text: expect.stringMatching(
          new RegExp(`^\\d\\d:\\d\\d:\\d\\d  POST /auth/sign-in  ${signIn.status}  \\d+ ms$`),
        ),
      },
    ]);

    // The emulator is out of Ctrl-C's reach (its own process group), so it is stopped last, in
    // order: the pollers cannot call it after it is gone.
    const emulators = processesWith(marker).filter((pid) =>
      readFileSync(`/proc/${pid}/cmdline`, "latin1").includes("moto_server"),
    );
    expect(emulators).toHaveLength(1);
    expect(processGroupOf(emulators[0] as number)).not.toBe(child.pid);

    // Ctrl-C: SIGINT to the whole foreground process group, as a terminal sends it.
    const beforeStop = output.length;
    process.kill(-child.pid!, "SIGINT");
    const deadline = new Promise<never>((_, reject) =>
      setTimeout(
        () => reject(new Error(`no exit within 20 s:\n${output.map((l) => l.text).join("\n")}`)),
        20_000,
      ).unref(),
    );
    expect(await Promise.race([exited, deadline])).toEqual({ code: 0, signal: null });
    expect(shownByDefault(output.slice(beforeStop))).toEqual([
      { stream: "stdout", text: "Stopping..." },
      { stream: "stdout", text: "Stopped." },
    ]);
    // Not one warning or error line in the whole run, nor anything on stderr but debug lines.
    expect(output.filter((l) => ["warn", "error"].includes(levelOf(l) ?? ""))).toEqual([]);
    expect(shownByDefault(output.filter((l) => l.stream === "stderr"))).toEqual([]);
    expect(output.filter((l) => /ECONNREFUSED|fetch failed|stream poller/i.test(l.text))).toEqual([]);
    // And the emulator it started is gone with it.
    await until(() => processesWith(marker).length === 0, "no process left", output, 10_000);
  });
});
