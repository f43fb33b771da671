/**
 * `npx tsx bench/profile.ts`: where the bundled data plane's CPU goes. Builds the asset as
 * `cdk synth` does, runs it in a child `node` behind the function-URL front
 * (bench/bundled.ts) with the store behind the keep-alive front, warms it, profiles it while loading it (apiKey, no rules,
 * bearer target credential) and prints the self time by package and folder
 * (bench/profile-summary.ts). `--all` prints the whole bundled section of `npm run bench` instead
 * (CPU beside the minimal proxy, store calls, p50/p99, accuracy, profile).
 */
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { buildDataPlaneBundle } from "./bundle-report.ts";
import {
  accuracyRun,
  benchBundled,
  buildChild,
  printBundled,
  printProfile,
  profileGateway,
} from "./bundled.ts";
import { startKeepAliveFront } from "./keep-alive-front.ts";

const REGION = "us-east-1";

async function main() {
  process.env.AWS_ACCESS_KEY_ID ??= "bench";
  process.env.AWS_SECRET_ACCESS_KEY ??= "bench";
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = "true";
  process.env.LOG_LEVEL = "silent";
  process.env.TABLE_NAME = `profile-${randomBytes(3).toString("hex")}`;
  process.env.KMS_KEY_ALIAS = `alias/${process.env.TABLE_NAME}`;
  process.env.REGIONS = REGION;
  process.env.HOME_REGION = REGION;
  const { startEmulator } = await import("#local/emulator.ts");
  const { startLocalStack } = await import("#local/runner.ts");
  const { createUser } = await import("#lib/domain/users.ts");
  const { issueToken } = await import("#lib/domain/tokens.ts");
  const { setClientPlan } = await import("../cli/client-plan.ts");
  const emulator = await startEmulator();
  const front = await startKeepAliveFront(emulator.endpoint);
  process.env.AWS_ENDPOINT_URL = front.endpoint;
  const stack = await startLocalStack();
  const body = JSON.stringify({ ok: true, items: [1, 2, 3], note: "benchmark target" });
  const target = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
  const targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
  const bundle = await buildDataPlaneBundle();
  try {
    const user = await createUser({
      email: `profile-${Date.now()}@example.test`,
      firstName: "P",
      lastName: "F",
    });
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
    const clientId = (await call("POST", "/api/clients", { clientName: "Profile" })).clients![0]!.clientId!;
    await setClientPlan(clientId, "team");
    const api = `/api/clients/${clientId}`;
    const targetId = (
      await call("POST", `${api}/targets`, {
        targetName: "t",
        targetRegion: REGION,
        targetBaseURL: targetUrl,
        targetTestPath: "/",
      })
    ).targets![0]!.targetId!;
    const targetCredentialId = (
      await call("POST", `${api}/credentials`, {
        credentialName: "upstream",
        credentialType: "target",
        authType: "bearer",
        region: REGION,
        secret: { token: "upstream-token" },
      })
    ).credentials![0]!.credentialId!;
    const input = {
      call,
      api,
      region: REGION,
      targetUrl,
      targetId,
      targetCredentialId,
      front,
      outdir: bundle.outdir,
      requests: Number(process.env.BENCH_REQUESTS ?? 600),
      connections: Number(process.env.BENCH_CONNECTIONS ?? 10),
      sample: 50,
      profile: true,
    };
    if (process.argv.includes("--accuracy")) console.log(await accuracyRun(buildChild(bundle.outdir), input));
    else if (process.argv.includes("--all")) printBundled(await benchBundled(input), input);
    else printProfile(await profileGateway(buildChild(bundle.outdir), input));
  } finally {
    rmSync(bundle.outdir, { recursive: true, force: true });
    target.closeAllConnections();
    target.close();
    await stack.stop();
    front.stop();
    await emulator.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
