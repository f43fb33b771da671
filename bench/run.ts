/**
 * `npm run bench`: the data plane's cost, measured side by side in one run on this machine.
 *
 * Starts the emulator, a keep-alive front to it (bench/keep-alive-front.ts: reused connections,
 * as the SDK has in AWS) and the local stack, a target on loopback, configures proxies through
 * the Core API, then:
 * - the bundled data plane as Lambda runs it (bench/bundled.ts): the asset `cdk synth` builds, in a
 *   child `node` with Lambda's environment behind a thin function-URL front; the child's own CPU
 *   per request beside the minimal Node proxy's (a child too), store calls per request before and
 *   after the answer, the caller's p50/p99, the accuracy run (200 concurrent requests at a limit
 *   of 50), and a CPU profile by package;
 * - throughput of the local stack beside the target and a minimal proxy (autocannon: requests/s,
 *   p50, p99; the local stack runs the same handler from source under tsx, for the relative
 *   figures: rules, jwtVerify);
 * - the data-plane bundle's size and median import time in fresh processes
 *   (bench/bundle-report.ts), the CPU per access-rule decision (bench/rule-cost.ts), the transforms
 *   case (bench/transforms.ts), and the cost of compressed answers (bench/content-coding.ts);
 * - the scale simulation's table and goal line (bench/scale-sim.ts, `npm run bench:scale`).
 * A benchmark, not a test: it asserts nothing.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { createServer } from "node:http";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { buildDataPlaneBundle, importTimesMs, printBundleFigures } from "./bundle-report.ts";
import { benchBundled, printBundled } from "./bundled.ts";
import { codingRows, printCodingRows } from "./content-coding.ts";
import { minimalProxy } from "./minimal-proxy.ts";
import { printRuleCost, ruleCostRows } from "./rule-cost.ts";
import { sandboxCost } from "./sandbox-cost.ts";
import { listen, startBenchWorld } from "./setup.ts";
import { benchTransforms, coldFirstCallMs, printTransformFigures, sandboxFileOf } from "./transforms.ts";

const REGION = "us-east-1";
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 600);
const WARM_SAMPLE = 50;

interface Row {
  name: string;
  /** One connection: the latency of a request on its own. */
  p50: number;
  p99: number;
  /** CONNECTIONS connections: throughput (completed requests / elapsed seconds). */
  rps: number;
  loadedP99: number;
  non2xx: number;
}

/**
 * Throughput runs: the baselines for a fixed time; the gateway for a fixed number of requests,
 * which stays under the proxy credential's rate limit (team plan: 1,000 a minute).
 */
async function load(
  name: string,
  url: string,
  headers: Record<string, string> = {},
  run: { duration: number } | { amount: number } = { amount: REQUESTS },
): Promise<Row> {
  // Warm-up (connections, JIT, the gateway's configuration cache).
  await autocannon({ url, connections: 2, amount: 20, headers });
  const single = await autocannon({ url, connections: 1, amount: Math.min(REQUESTS, 200), headers });
  const loaded = await autocannon({ url, connections: CONNECTIONS, headers, ...run });
  return {
    name,
    p50: single.latency.p50,
    p99: single.latency.p99,
    rps: loaded.requests.total / Math.max((loaded.finish.getTime() - loaded.start.getTime()) / 1000, 0.001),
    loadedP99: loaded.latency.p99,
    non2xx: single.non2xx + loaded.non2xx,
  };
}

async function main() {
  const world = await startBenchWorld({ name: "Bench", regions: [REGION, "eu-west-1"] });
  const { emulator, front, stack, targetUrl, call, api, targetId, targetCredentialId, servers } = world;
  try {
    const floor = minimalProxy(targetUrl);
    servers.push(floor);
    const floorUrl = await listen(floor);

    // JWKS for the jwtVerify scenario.
    const { publicKey, privateKey } = await generateKeyPair("RS256");
    const jwk = { ...(await exportJWK(publicKey)), kid: "bench-key", alg: "RS256", use: "sig" };
    const jwks = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    servers.push(jwks);
    const jwksUrl = await listen(jwks);

    const apiKey = randomBytes(24).toString("hex");
    const apiKeyCredentialId = (
      await call("POST", `${api}/credentials`, {
        credentialName: "caller key",
        credentialType: "proxy",
        authType: "apiKey",
        region: REGION,
        secret: { keyName: "x-api-key", keyValue: apiKey },
      })
    ).credentials![0]!.credentialId!;
    const jwtCredentialId = (
      await call("POST", `${api}/credentials`, {
        credentialName: "caller jwt",
        credentialType: "proxy",
        authType: "jwtVerify",
        region: REGION,
        secret: {
          algorithms: ["RS256"],
          issuer: "https://issuer.bench",
          audience: "gateway",
          subject: "svc-*",
          jwksUri: jwksUrl,
        },
      })
    ).credentials![0]!.credentialId!;
    const proxyFor = async (credentialId: string) =>
      (
        await call("POST", `${api}/proxies`, {
          proxyName: "bench",
          proxyRegion: REGION,
          proxyProxyCredentialId: credentialId,
          proxyTargetId: targetId,
          proxyTargetCredentialId: targetCredentialId,
        })
      ).proxies![0]!.proxyId!;
    const apiKeyProxy = await proxyFor(apiKeyCredentialId);
    const jwtProxy = await proxyFor(jwtCredentialId);
    for (const rule of [
      {
        effect: "deny",
        priority: 100,
        methods: ["DELETE"],
        path: { pattern: "^/admin", presence: "present" },
      },
      { effect: "allow", priority: 10, path: { pattern: "^/", presence: "present" } },
    ])
      await call("POST", `${api}/proxies/${apiKeyProxy}/rules`, rule);
    const jwt = await new SignJWT({ scope: "read" })
      .setProtectedHeader({ alg: "RS256", kid: "bench-key" })
      .setIssuer("https://issuer.bench")
      .setAudience("gateway")
      .setSubject("svc-bench")
      .setIssuedAt()
      .setExpirationTime("1h")
      .sign(privateKey);

    const dataPlane = stack.regions[REGION]!;
    const apiKeyUrl = `${dataPlane}/api/${apiKeyProxy}/items?page=1`;
    const jwtUrl = `${dataPlane}/api/${jwtProxy}/items?page=1`;

    // The bundled handler, as Lambda runs it (bench/bundled.ts).
    const bundle = await buildDataPlaneBundle();
    const bundled = await benchBundled({
      call,
      api,
      region: REGION,
      targetUrl,
      targetId,
      targetCredentialId,
      front: front!,
      outdir: bundle.outdir,
      requests: REQUESTS,
      connections: CONNECTIONS,
      sample: WARM_SAMPLE,
      profile: process.env.BENCH_PROFILE !== "0",
    });

    const rows = [
      await load("direct to the target", `${targetUrl}/items?page=1`, {}, { duration: 3 }),
      await load("minimal Node reverse proxy", `${floorUrl}/items?page=1`, {}, { duration: 3 }),
      await load("gateway: apiKey, 2 rules, bearer target", apiKeyUrl, { "x-api-key": apiKey }),
      await load("gateway: jwtVerify, bearer target", jwtUrl, { authorization: `Bearer ${jwt}` }),
    ];
    // Transforms: the sandbox in process, then the gateway case through the real data plane.
    const sandbox = await sandboxCost();
    const transforms = await benchTransforms({
      call,
      api,
      region: REGION,
      dataPlane,
      targetId,
      targetCredentialId,
      requests: REQUESTS,
      connections: CONNECTIONS,
    });
    const importMs = importTimesMs(bundle.entryFile, 15);
    const coldSandbox = coldFirstCallMs(sandboxFileOf(bundle.outdir));
    rmSync(bundle.outdir, { recursive: true, force: true });

    const pad = (value: string, width: number) => value.padEnd(width);
    console.log(
      `\nLocal stack (the handler from source under tsx, in the bench process): latency on 1 connection; throughput with ${CONNECTIONS} connections (baselines 3 s, gateway ${REQUESTS} requests); emulator ${emulator.endpoint} through the keep-alive front`,
    );
    console.log(
      `${pad("path", 42)}${pad("p50 ms", 9)}${pad("p99 ms", 9)}${pad(`req/s @${CONNECTIONS}`, 12)}${pad(`p99 @${CONNECTIONS}`, 11)}non-2xx`,
    );
    for (const row of rows) {
      console.log(
        `${pad(row.name, 42)}${pad(String(row.p50), 9)}${pad(String(row.p99), 9)}${pad(row.rps.toFixed(0), 12)}${pad(String(row.loadedP99), 11)}${row.non2xx}`,
      );
    }
    const floorRow = rows[1]!;
    for (const row of rows.slice(2)) {
      console.log(
        `added over the minimal proxy (${row.name}): p50 +${(row.p50 - floorRow.p50).toFixed(1)} ms, p99 +${(row.p99 - floorRow.p99).toFixed(1)} ms`,
      );
    }
    printBundled(bundled, { requests: REQUESTS, connections: CONNECTIONS, sample: WARM_SAMPLE });
    console.log("");
    printBundleFigures(bundle, importMs, 6);
    printTransformFigures(sandbox, coldSandbox, transforms, REQUESTS, CONNECTIONS);
    // In-process, after the load runs (the stack is idle): CPU per access-rule decision.
    printRuleCost(ruleCostRows());
    // In-process: the cost of decoding a coded answer beside re-encoding it (issue 19).
    printCodingRows(await codingRows());
    console.log(
      "Note: the emulator (moto, about 3.5 ms per DynamoDB call here) dominates the gateway's added latency; in AWS a DynamoDB call takes a few ms in-region.",
    );
    // The scale simulation's goal line (bench/scale-sim.ts, its own emulator; BENCH_SCALE=0 skips it).
    if (process.env.BENCH_SCALE !== "0") {
      console.log("\nScale simulation (npm run bench:scale, without the logged-bodies table):");
      spawnSync(
        process.execPath,
        [...process.execArgv, fileURLToPath(new URL("./scale-sim.ts", import.meta.url))],
        {
          stdio: "inherit",
          env: { ...process.env, SIM_BODIES: "0", AWS_ENDPOINT_URL: undefined },
        },
      );
    }
  } finally {
    await world.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
