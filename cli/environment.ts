/**
 * Where the admin CLI points: the normal environment (TABLE_NAME, HOME_REGION, REGIONS and the AWS
 * credential chain, as the deployed functions use), or, with `--local [file]`, the local stack that
 * `npm start` described in .local/stack.json.
 */
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { resetClients } from "#lib/aws/clients.ts";
import { resetConfig } from "#lib/config.ts";
import { CliError } from "./errors.ts";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** The file `npm start` writes (local/start.ts). */
export const DEFAULT_STACK_FILE = resolve(root, ".local/stack.json");

const StackFile = z.object({
  awsEndpointUrl: z.string().url(),
  tableName: z.string().min(3),
  homeRegion: z.string().min(1),
  /** Region name -> data-plane URL; the CLI only needs the names. */
  regions: z.record(z.string(), z.string()).optional(),
  /** The base of the links in e-mails (the set-password e-mail of `users create`). */
  appUrl: z.string().url().optional(),
});

/**
 * Resolve a user-given path. `npm run admin` runs in the package root, so a relative path is taken
 * from the directory npm was started in (INIT_CWD) when npm set it.
 */
export function resolveStackFile(file: string): string {
  return resolve(process.env.INIT_CWD ?? process.cwd(), file);
}

/**
 * Point this process at the local stack: AWS_ENDPOINT_URL, TABLE_NAME, HOME_REGION and REGIONS
 * from the file (they win over the environment: `--local` is explicit), plus dummy AWS credentials
 * when none are set, so real credentials are never needed (nor sent) for the emulator.
 */
export function applyLocalStack(file: string): { file: string; tableName: string; endpoint: string } {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    throw new CliError(`cannot read ${file}: start the local stack first (npm start writes it)`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new CliError(`${file} is not JSON`);
  }
  const parsed = StackFile.safeParse(json);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
    throw new CliError(`${file} is not a stack file (${problems})`);
  }
  const stack = parsed.data;
  const regions = [...new Set([stack.homeRegion, ...Object.keys(stack.regions ?? {})])];
  process.env.AWS_ENDPOINT_URL = stack.awsEndpointUrl;
  process.env.TABLE_NAME = stack.tableName;
  process.env.HOME_REGION = stack.homeRegion;
  process.env.REGIONS = regions.join(",");
  process.env.AWS_REGION ??= stack.homeRegion;
  if (stack.appUrl) process.env.APP_URL ??= stack.appUrl;
  if (!process.env.AWS_ACCESS_KEY_ID) {
    process.env.AWS_ACCESS_KEY_ID = "local";
    process.env.AWS_SECRET_ACCESS_KEY = "local";
    delete process.env.AWS_SESSION_TOKEN;
  }
  resetConfig();
  resetClients();
  return { file, tableName: stack.tableName, endpoint: stack.awsEndpointUrl };
}

/**
 * `--local` takes an optional file, and commander would take the next word as that file even when
 * it is the command (`--local users get ...`). Before parsing, each `--local` among the global
 * options becomes `--local=<file>`: the next word when it is not a command name nor an option,
 * else the default file.
 */
export function normalizeLocalFlag(args: readonly string[], commandNames: ReadonlySet<string>): string[] {
  const out: string[] = [];
  let i = 0;
  for (; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === "--") break;
    if (!arg.startsWith("-")) break; // the command: global options end here
    if (arg === "--local") {
      const next = args[i + 1];
      if (next !== undefined && !next.startsWith("-") && !commandNames.has(next)) {
        out.push(`--local=${next}`);
        i++;
      } else {
        out.push(`--local=${DEFAULT_STACK_FILE}`);
      }
      continue;
    }
    out.push(arg);
  }
  return [...out, ...args.slice(i)];
}
