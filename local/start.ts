/**
 * `npm start`: the whole service locally. Starts moto (or uses AWS_ENDPOINT_URL), provisions it,
 * serves the Core API and each region's data-plane address, creates a local user and token on
 * first start, prints them and writes them to .local/stack.json. Ctrl-C stops everything.
 */

import { randomBytes } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { setFirstPassword } from "#lib/domain/accounts.ts";
import { issueToken, resolveToken } from "#lib/domain/tokens.ts";
import { createUser, findUserIdByEmail, getUser } from "#lib/domain/users.ts";
import type { RouteChange } from "./api-gateway.ts";
import { ensureConsoleBuilt } from "./console-build.ts";
import { type Emulator, NO_EMULATOR_HELP, startEmulator } from "./emulator.ts";
import { type LocalStack, startLocalStack } from "./runner.ts";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
/** LOCAL_STACK_FILE: another place for it (a test's own, so a running stack's file stays). */
const stackFile = process.env.LOCAL_STACK_FILE
  ? resolve(process.env.LOCAL_STACK_FILE)
  : resolve(root, ".local/stack.json");
const LOCAL_USER_EMAIL = "local-admin@localhost.localdomain";

export function applyLocalDefaults(): void {
  process.env.AWS_ACCESS_KEY_ID ??= "local";
  process.env.AWS_SECRET_ACCESS_KEY ??= "local";
  process.env.AWS_REGION ??= process.env.HOME_REGION ?? "us-east-1";
  process.env.TABLE_NAME ??= "proxy-gateway";
  // The machines run Node 20 (the Lambda runtime is newer); the SDK's upgrade notice is noise here.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
  // CloudWatch's embedded metrics (a JSON line per proxied request) have no reader locally: off,
  // so the terminal shows the logs. POWERTOOLS_METRICS_DISABLED=false turns them back on.
  process.env.POWERTOOLS_METRICS_DISABLED ??= "true";
  // The terminal is for a person: warnings and errors, not the info lines meant for CloudWatch
  // (the one line per change made through the API stands for those). LOG_LEVEL=info or debug
  // shows more (docs/local-runner.md).
  process.env.LOG_LEVEL ??= "warn";
}

/** The settings that choose the local ports, by the port they chose. */
function portSettings(): Map<number, string> {
  return new Map([
    [Number(process.env.PORT ?? 3000), "PORT"],
    [Number(process.env.DATA_PLANE_PORT ?? 3100), "DATA_PLANE_PORT"],
  ]);
}

/** One line for a start-up failure a user can fix: a port in use names its setting. */
export function startFailureLine(error: unknown, settings = portSettings()): string {
  const { code, port } = (error ?? {}) as { code?: string; port?: number };
  if (code === "EADDRINUSE" && typeof port === "number") {
    const setting = settings.get(port) ?? "PORT";
    return `Port ${port} is already in use: stop what uses it, or choose another with ${setting}, e.g. ${setting}=${port + 1} npm start`;
  }
  return `npm start failed: ${error instanceof Error ? error.message : String(error)}`;
}

interface StackFile {
  baseUrl: string;
  regions: Record<string, string>;
  userId: string;
  token: string;
  awsEndpointUrl: string;
  tableName: string;
  homeRegion: string;
  /** APP_URL of the running stack: `npm run admin -- --local` links its e-mails to it. */
  appUrl: string;
}

/** Reuse the saved user and token when the emulator still holds them (a long-lived LocalStack). */
async function localUser(): Promise<{ userId: string; token: string; created: boolean; password?: string }> {
  try {
    const saved = JSON.parse(await readFile(stackFile, "utf8")) as Partial<StackFile>;
    if (saved.token && saved.userId) {
      const resolved = await resolveToken(saved.token);
      if (resolved?.userId === saved.userId && (await getUser(saved.userId))) {
        return { userId: saved.userId, token: saved.token, created: false };
      }
    }
  } catch {
    // no saved stack, or it is unreadable: create a new user below
  }
  const existing = await findUserIdByEmail(LOCAL_USER_EMAIL);
  const userId =
    existing ??
    String(
      (
        await createUser({
          email: LOCAL_USER_EMAIL,
          firstName: "Local",
          lastName: "Admin",
          username: "local-admin",
        })
      ).userId,
    );
  const { token } = await issueToken(userId);
  // The console's way in for the operator: a random password, printed once (never written to a file).
  const password = randomBytes(15).toString("base64url");
  const set = await setFirstPassword(userId, password);
  return { userId, token, created: true, ...(set ? { password } : {}) };
}

/**
 * One line per answered Core API request that changes something (sign-up, sign-in, an
 * organisation, a member, a token...): the route's template (never an id or a session), the
 * status and the time taken. Reads (GET) and the data plane print nothing (docs/local-runner.md).
 */
export function changeLine(change: RouteChange, at = new Date()): string {
  return `${at.toTimeString().slice(0, 8)}  ${change.method} ${change.resource}  ${change.status}  ${change.ms} ms`;
}

/** A path as a command typed here would name it: relative under the current directory, else absolute. */
function shownPath(path: string): string {
  const shown = relative(process.cwd(), path);
  return shown && !shown.startsWith("..") ? shown : path;
}

/** A whole number of milliseconds from a setting, or undefined when unset. */
function periodSetting(name: string): number | undefined {
  const value = process.env[name];
  if (value === undefined || value === "") return undefined;
  const ms = Number(value);
  if (!Number.isInteger(ms) || ms < 10)
    throw new Error(`${name} must be a whole number of milliseconds, at least 10`);
  return ms;
}

async function main(): Promise<void> {
  applyLocalDefaults();
  const running: { emulator?: Emulator; stack?: LocalStack } = {};
  let stopping = false;
  let startup: Promise<void> = Promise.resolve();

  // Ctrl-C (SIGINT) and SIGTERM, from the first moment: let the start-up step in progress end,
  // then stop in order (servers, schedules, pollers, then the emulator they call), exit 0. The
  // emulator is out of Ctrl-C's reach (local/emulator.ts), so nothing calls it once it is gone.
  // A repeated signal changes nothing: under `npm start` every Ctrl-C arrives twice (from the
  // terminal, and forwarded by npm).
  const onSignal = () => {
    if (stopping) return;
    stopping = true;
    process.stdout.write("Stopping...\n");
    void (async () => {
      await startup.catch(() => undefined);
      await running.stack?.stop();
      await running.emulator?.stop();
      process.stdout.write("Stopped.\n");
      process.exit(0);
    })();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  startup = (async () => {
    let schedulePeriodMs: number | undefined;
    try {
      schedulePeriodMs = periodSetting("LOCAL_SCHEDULE_PERIOD_MS");
      running.emulator = await startEmulator();
    } catch (error) {
      process.stderr.write(
        `${error instanceof Error && error.message === NO_EMULATOR_HELP ? error.message : String(error)}\n`,
      );
      process.exit(1);
    }
    const emulator = running.emulator;
    process.env.AWS_ENDPOINT_URL = emulator.endpoint;
    if (stopping) return;
    // The web console (console/), rebuilt only when its sources changed since the last build.
    // LOCAL_CONSOLE=false: neither built nor served (the API only).
    const withConsole = process.env.LOCAL_CONSOLE !== "false";
    if (withConsole) {
      try {
        if (await ensureConsoleBuilt()) process.stdout.write("Web console built into console/dist\n");
      } catch (error) {
        process.stderr.write(`The web console could not be built (the API still starts): ${String(error)}\n`);
      }
    }
    if (stopping) return;
    try {
      running.stack = await startLocalStack({
        port: Number(process.env.PORT ?? 3000),
        dataPlanePort: Number(process.env.DATA_PLANE_PORT ?? 3100),
        runSchedules: true,
        ...(schedulePeriodMs ? { schedulePeriodMs } : {}),
        streams: true,
        ...(withConsole ? {} : { consoleDir: false as const }),
        onChange: (change) => process.stdout.write(`${changeLine(change)}\n`),
      });
    } catch (error) {
      // One line, and nothing left running: the emulator this command started is stopped.
      process.stderr.write(`${startFailureLine(error)}\n`);
      await emulator.stop();
      process.exit(1);
    }
    const stack = running.stack;
    if (stopping) return;
    const user = await localUser();
    if (stopping) return;
    // localhost, not 127.0.0.1: WebAuthn refuses an IP address as the relying-party id, and the
    // console, the API, APP_URL and the links in e-mails share this one origin (cookies, passkeys).
    const baseUrl = `http://localhost:${new URL(stack.baseUrl).port}`;
    const file: StackFile = {
      baseUrl,
      regions: stack.regions,
      userId: user.userId,
      token: user.token,
      awsEndpointUrl: emulator.endpoint,
      tableName: stack.config.tableName,
      homeRegion: stack.config.homeRegion,
      appUrl: stack.config.appUrl,
    };
    await mkdir(dirname(stackFile), { recursive: true });
    await writeFile(stackFile, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });

    const lines = [
      "",
      "Proxy gateway running locally",
      withConsole
        ? `  Web console:     ${baseUrl}/  (sign up there, or sign in as below)`
        : "  Web console:     not served (LOCAL_CONSOLE=false)",
      user.password
        ? `  Console sign-in: ${LOCAL_USER_EMAIL} / ${user.password}  (shown once; "Forgot password?" sets another)`
        : `  Console sign-in: ${LOCAL_USER_EMAIL} (its password was shown on the first start; "Forgot password?" sets another, the e-mail is in the emulator)`,
      `  Core API:        ${baseUrl}`,
      ...Object.entries(stack.regions).map(([region, url]) => `  Data plane ${region.padEnd(10)} ${url}`),
      `  AWS emulator:    ${emulator.endpoint}${emulator.owned ? " (moto, started by npm start)" : " (AWS_ENDPOINT_URL)"}`,
      `  User id:         ${user.userId}${user.created ? " (created now)" : ""}`,
      `  Token:           ${user.token}`,
      `  Written to:      ${stackFile}`,
      "",
      `  Try: curl -s ${baseUrl}/api/users -H "Authorization: $(jq -r .token ${shownPath(stackFile)})"`,
      "  Data lives as long as the emulator runs. Ctrl-C stops everything started here.",
      "  Below: warnings, errors, and one line per change made through the Core API (LOG_LEVEL=debug shows more).",
      "",
    ];
    process.stdout.write(`${lines.join("\n")}\n`);
  })();
  await startup;
}

// Run as `npm start` (not when a test imports startFailureLine).
if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) await main();
