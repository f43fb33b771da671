/**
 * Which Chromium the browser tests launch (README "The two commands"): `CHROMIUM_PATH` when set,
 * else the system's (`/usr/bin/chromium`, Debian's `chromium`) when there is one, else the one
 * shipped inside the `@sparticuz/chromium` devDependency, extracted to the temporary folder on
 * first use (about 2 to 10 s, once). So `npm ci && npm test` needs no system package for the
 * browser. 147 is the newest `@sparticuz/chromium` whose `engines` accept Node 20.
 */
import { existsSync } from "node:fs";

const SYSTEM_CHROMIUM = "/usr/bin/chromium";

/** The arguments every launch gets. */
export const CHROMIUM_ARGS = ["--no-sandbox"];

/**
 * The environment every launch gets: `LANG=en_US.UTF-8`. Under `LANG=C.UTF-8` (or none) the
 * shipped Chromium reports `navigator.language` as `en-US@posix`, which `Intl` refuses (uPlot
 * formats numbers with it: the telemetry page would not render); `--lang` does not change it.
 */
export const chromiumEnv = (): Record<string, string | undefined> => ({
  ...process.env,
  LANG: "en_US.UTF-8",
});

/** The Chromium to launch, and where it came from (printed when it does not start). */
export async function chromiumExecutable(): Promise<{ path: string; source: string }> {
  if (process.env.CHROMIUM_PATH) return { path: process.env.CHROMIUM_PATH, source: "CHROMIUM_PATH" };
  if (existsSync(SYSTEM_CHROMIUM)) return { path: SYSTEM_CHROMIUM, source: "the system's chromium" };
  const shipped = (await import("@sparticuz/chromium")).default;
  return { path: await shipped.executablePath(), source: "@sparticuz/chromium" };
}
