/**
 * The AWS emulator for local runs and tests: `moto_server` started on a free port, or the endpoint
 * in AWS_ENDPOINT_URL (LocalStack or a moto you run yourself) when that is set.
 *
 * Our launcher (local/moto_server.py) runs in its own process group, so Ctrl-C in the terminal does
 * not reach it: the process that started it stops it (`stop()`) after everything that calls it, and
 * it ends by itself when that process is gone (its stdin closes). The plain `moto_server` fallback
 * stays in the caller's process group, as before.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";

export interface Emulator {
  endpoint: string;
  /** True when we started it (and so stop it). */
  owned: boolean;
  stop(): Promise<void>;
}

export const NO_EMULATOR_HELP =
  "No AWS emulator found: install moto (pip install 'moto[server]') so `moto_server` is on PATH, or start LocalStack and set AWS_ENDPOINT_URL=http://localhost:4566";

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port")),
      );
    });
  });
}

async function waitUntilReachable(endpoint: string, timeoutMs: number, child?: ChildProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (child && child.exitCode === 3) throw new MotoUnavailable("moto is not importable");
    if (child && child.exitCode !== null) throw new Error(`moto_server exited with code ${child.exitCode}`);
    try {
      await fetch(endpoint, { signal: AbortSignal.timeout(1000) });
      return;
    } catch (error) {
      lastError = error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  throw new Error(`AWS emulator at ${endpoint} did not answer within ${timeoutMs} ms: ${String(lastError)}`);
}

export async function startEmulator(options: { endpoint?: string } = {}): Promise<Emulator> {
  const given = options.endpoint ?? process.env.AWS_ENDPOINT_URL;
  if (given) {
    await waitUntilReachable(given, 5_000);
    return { endpoint: given.replace(/\/$/, ""), owned: false, stop: async () => {} };
  }
  try {
    return await startMoto(["python3", MOTO_LAUNCHER, "--exit-when-stdin-closes"], { ownGroup: true });
  } catch (error) {
    // python3 without moto (moto installed through pipx, say): the plain moto_server command.
    const unavailable =
      error instanceof MotoUnavailable || (error instanceof Error && error.message === NO_EMULATOR_HELP);
    if (!unavailable) throw error;
    return startMoto(["moto_server"]);
  }
}

/** Our launcher of moto (serialised requests, DynamoDB-like transactions): see the file's header. */
const MOTO_LAUNCHER = fileURLToPath(new URL("./moto_server.py", import.meta.url));

class MotoUnavailable extends Error {}

async function startMoto(
  [command, ...args]: string[],
  options: { ownGroup?: boolean } = {},
): Promise<Emulator> {
  const port = await freePort();
  const child = spawn(command!, [...args, "-H", "127.0.0.1", "-p", String(port)], {
    // stdin: a pipe only this process holds; the launcher exits when it closes.
    stdio: [options.ownGroup ? "pipe" : "ignore", "ignore", "pipe"],
    env: { ...process.env, MOTO_ALLOW_NONEXISTENT_REGION: "false" },
    detached: options.ownGroup === true,
  });
  const spawnError = new Promise<never>((_, reject) =>
    child.once("error", (error: NodeJS.ErrnoException) =>
      reject(error.code === "ENOENT" ? new Error(NO_EMULATOR_HELP) : error),
    ),
  );
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const endpoint = `http://127.0.0.1:${port}`;
  try {
    await Promise.race([waitUntilReachable(endpoint, 20_000, child), spawnError]);
  } catch (error) {
    child.kill("SIGKILL");
    if (error instanceof MotoUnavailable || (error instanceof Error && error.message === NO_EMULATOR_HELP))
      throw error;
    throw new Error(`${String(error)}\n${stderr}`);
  }
  // Whatever ends this process (an error before Ctrl-C, an uncaught exception), moto goes with it:
  // a crashed `npm start` must not leave an emulator behind.
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  child.once("exit", () => process.off("exit", killOnExit));
  return {
    endpoint,
    owned: true,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
        setTimeout(() => child.kill("SIGKILL"), 3000).unref();
      }),
  };
}
