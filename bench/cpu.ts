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

/** Standalone: emulator, local stack, one apiKey proxy without rules. */
async function main() {
  // BENCH_KEEP_ALIVE=1: the store calls go through a keep-alive front (bench/keep-alive-front.ts).
  const { startBenchWorld } = await import("./setup.ts");
  const world = await startBenchWorld({
    name: "Cpu",
    regions: ["us-east-1"],
    keepAlive: process.env.BENCH_KEEP_ALIVE === "1",
  });
  const { stack, targetUrl, call, api, targetId, targetCredentialId } = world;
  try {
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
    await world.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
