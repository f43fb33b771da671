/**
 * CPU of the AWS SDK's per-call machinery (µs per DynamoDB GetItem through lib/aws/clients.ts),
 * measured against a keep-alive loopback server in a child process answering a canned item (so
 * only the client's CPU is counted, and no emulator connection churn). A measuring tool for
 * docs/performance.md: `npx tsx bench/sdk-call-cost.ts`.
 */
import { fork } from "node:child_process";
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const SERVER = `import { createServer } from "node:http";
const item = JSON.stringify({ Item: { pKey: { S: "CLIENT#x" }, sKey: { S: "PROXY#y" }, n: { N: "3" }, m: { M: { a: { S: "b" } } } } });
const s = createServer((req, res) => { req.resume(); req.on("end", () => { res.writeHead(200, { "content-type": "application/x-amz-json-1.0", "x-amzn-requestid": "r" }); res.end(item); }); });
s.keepAliveTimeout = 60000;
s.listen(0, "127.0.0.1", () => process.send(s.address().port));`;

export async function sdkCallCostUs(calls = 3000): Promise<number> {
  const file = join(tmpdir(), `sdk-call-cost-server-${process.pid}.mjs`);
  writeFileSync(file, SERVER);
  const child = fork(file, [], { stdio: ["ignore", "ignore", "inherit", "ipc"] });
  try {
    const port = await new Promise<number>((resolve) => child.once("message", (m) => resolve(Number(m))));
    process.env.AWS_ENDPOINT_URL = `http://127.0.0.1:${port}`;
    process.env.AWS_ACCESS_KEY_ID ??= "bench";
    process.env.AWS_SECRET_ACCESS_KEY ??= "bench";
    const { dynamo, resetClients } = await import("#lib/aws/clients.ts");
    const { GetCommand } = await import("#lib/aws/document-client.ts");
    resetClients();
    const db = dynamo("us-east-1");
    const get = () => db.send(new GetCommand({ TableName: "t", Key: { pKey: "CLIENT#x", sKey: "PROXY#y" } }));
    for (let i = 0; i < 500; i++) await get();
    const before = process.cpuUsage();
    // 4 concurrent callers, as a warm data plane with a few requests in flight.
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let i = 0; i < calls / 4; i++) await get();
      }),
    );
    const used = process.cpuUsage(before);
    resetClients();
    return (used.user + used.system) / calls;
  } finally {
    child.kill();
  }
}

if (process.argv[1]?.endsWith("sdk-call-cost.ts")) {
  const runs: number[] = [];
  for (let i = 0; i < 3; i++) runs.push(await sdkCallCostUs());
  runs.sort((a, b) => a - b);
  console.log(
    `SDK GetItem: ${runs.map((r) => r.toFixed(0)).join(", ")} µs per call (median ${runs[1]!.toFixed(0)})`,
  );
}
