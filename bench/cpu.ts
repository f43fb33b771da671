/**
 * CPU time of this process per proxied request, in µs (process.cpuUsage around a load run).
 *
 * The bench process hosts the target, the minimal proxy, the local stack (the gateway's handler)
 * and the load generator; the emulator is another process. So a run through a proxy costs
 * load generator + proxy + target, and the run direct to the target costs load generator +
 * target: the difference is the proxy's own CPU per request (`proxyUs`).
 *
 * `npx tsx bench/cpu.ts` runs only this measurement (apiKey caller auth, no rules, bearer target
 * credential), for profiling: `node --cpu-prof --import tsx bench/cpu.ts`.
 */
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import autocannon from "autocannon";

export interface CpuRow {
  name: string;
  /** Process CPU (user + system) per completed request, µs. */
  totalUs: number;
  /** totalUs minus the direct run's: the proxy's own CPU per request, µs. */
  proxyUs: number;
}

/**
 * Process CPU per request of `amount` requests at `connections` connections, after a warm-up;
 * GET unless `request` gives a method and a body.
 */
export async function cpuPerRequestUs(
  url: string,
  headers: Record<string, string>,
  amount: number,
  connections: number,
  request: { method?: "GET" | "POST" | "PUT"; body?: string } = {},
): Promise<number> {
  await autocannon({ url, headers, connections: 2, amount: 50, ...request });
  const before = process.cpuUsage();
  const result = await autocannon({ url, headers, connections, amount, ...request });
  const used = process.cpuUsage(before);
  if (result.non2xx > 0) throw new Error(`${url}: ${result.non2xx} answers were not 2xx`);
  return (used.user + used.system) / result.requests.total;
}

/**
 * CPU rows of each case beside the direct baseline (first case), medians of `rounds` runs. Mind
 * the proxy credential's rate limit (team plan: 1,000 a minute): rounds x (amount + 50) requests.
 */
export async function cpuRows(
  cases: { name: string; url: string; headers?: Record<string, string> }[],
  amount: number,
  connections: number,
  rounds = 1,
): Promise<CpuRow[]> {
  const samples = cases.map(() => [] as number[]);
  for (let round = 0; round < rounds; round++)
    for (const [i, item] of cases.entries())
      samples[i]!.push(await cpuPerRequestUs(item.url, item.headers ?? {}, amount, connections));
  const medianOf = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const direct = medianOf(samples[0]!);
  return cases.map((item, i) => ({
    name: item.name,
    totalUs: medianOf(samples[i]!),
    proxyUs: i === 0 ? 0 : medianOf(samples[i]!) - direct,
  }));
}

export function printCpuRows(rows: CpuRow[], amount: number, connections: number): void {
  console.log(
    `\nProcess CPU per request (µs; ${amount} requests at ${connections} connections; proxy's own = total - direct to the target):`,
  );
  for (const row of rows)
    console.log(
      `  ${row.name.padEnd(44)} total ${row.totalUs.toFixed(0).padStart(6)}   proxy's own ${row.proxyUs.toFixed(0).padStart(6)}`,
    );
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Standalone: emulator, local stack, one apiKey proxy without rules. */
async function main() {
  process.env.AWS_ACCESS_KEY_ID ??= "bench";
  process.env.AWS_SECRET_ACCESS_KEY ??= "bench";
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = "true";
  process.env.LOG_LEVEL = "silent";
  process.env.TABLE_NAME = `cpu-${randomBytes(3).toString("hex")}`;
  process.env.KMS_KEY_ALIAS = `alias/${process.env.TABLE_NAME}`;
  process.env.REGIONS = "us-east-1";
  process.env.HOME_REGION = "us-east-1";
  const { startEmulator } = await import("#local/emulator.ts");
  const { startLocalStack } = await import("#local/runner.ts");
  const { createUser } = await import("#lib/domain/users.ts");
  const { issueToken } = await import("#lib/domain/tokens.ts");
  const { setClientPlan } = await import("../cli/client-plan.ts");
  const emulator = await startEmulator();
  // BENCH_KEEP_ALIVE=1: the store calls go through a keep-alive front (bench/keep-alive-front.ts).
  const front =
    process.env.BENCH_KEEP_ALIVE === "1"
      ? await (await import("./keep-alive-front.ts")).startKeepAliveFront(emulator.endpoint)
      : undefined;
  process.env.AWS_ENDPOINT_URL = front?.endpoint ?? emulator.endpoint;
  const stack = await startLocalStack();
  const body = JSON.stringify({ ok: true, items: [1, 2, 3], note: "benchmark target" });
  const target = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
      res.end(body);
    });
  });
  const targetUrl = await listen(target);
  try {
    const user = await createUser({ email: `cpu-${Date.now()}@example.test`, firstName: "C", lastName: "P" });
    const { token } = await issueToken(String(user.userId));
    const call = async (method: string, path: string, payload?: unknown) => {
      const response = await fetch(`${stack.baseUrl}${path}`, {
        method,
        headers: { Authorization: token, "content-type": "application/json" },
        body: payload === undefined ? undefined : JSON.stringify(payload),
      });
      const json = (await response.json()) as Record<string, Record<string, string>[]>;
      if (response.status >= 300)
        throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
      return json;
    };
    const clientId = (await call("POST", "/api/clients", { clientName: "Cpu" })).clients![0]!.clientId!;
    await setClientPlan(clientId, "team");
    const api = `/api/clients/${clientId}`;
    const targetId = (
      await call("POST", `${api}/targets`, {
        targetName: "t",
        targetRegion: "us-east-1",
        targetBaseURL: targetUrl,
        targetTestPath: "/",
      })
    ).targets![0]!.targetId!;
    const targetCredentialId = (
      await call("POST", `${api}/credentials`, {
        credentialName: "upstream",
        credentialType: "target",
        authType: "bearer",
        region: "us-east-1",
        secret: { token: "upstream-token" },
      })
    ).credentials![0]!.credentialId!;
    const apiKey = randomBytes(24).toString("hex");
    const callerId = (
      await call("POST", `${api}/credentials`, {
        credentialName: "caller",
        credentialType: "proxy",
        authType: "apiKey",
        region: "us-east-1",
        secret: { keyName: "x-api-key", keyValue: apiKey },
      })
    ).credentials![0]!.credentialId!;
    const proxyId = (
      await call("POST", `${api}/proxies`, {
        proxyName: "cpu",
        proxyRegion: "us-east-1",
        proxyProxyCredentialId: callerId,
        proxyTargetId: targetId,
        proxyTargetCredentialId: targetCredentialId,
      })
    ).proxies![0]!.proxyId!;
    const amount = Number(process.env.BENCH_REQUESTS ?? 600);
    const connections = Number(process.env.BENCH_CONNECTIONS ?? 10);
    const rows = await cpuRows(
      [
        { name: "direct to the target", url: `${targetUrl}/items?page=1` },
        {
          name: "gateway: apiKey, no rules, bearer target",
          url: `${stack.regions["us-east-1"]}/api/${proxyId}/items?page=1`,
          headers: { "x-api-key": apiKey },
        },
      ],
      amount,
      connections,
    );
    printCpuRows(rows, amount, connections);
  } finally {
    target.closeAllConnections();
    target.close();
    await stack.stop();
    front?.stop();
    await emulator.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
