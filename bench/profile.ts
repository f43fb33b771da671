/**
 * `npx tsx bench/profile.ts`: where the bundled data plane's CPU goes. Builds the asset as
 * `cdk synth` does, runs it in a child `node` behind the function-URL front
 * (bench/bundled.ts) with the store behind the keep-alive front, warms it, profiles it while loading it (apiKey, no rules,
 * bearer target credential) and prints the self time by package and folder
 * (bench/profile-summary.ts). `--all` prints the whole bundled section of `npm run bench` instead
 * (CPU beside the minimal proxy, store calls, p50/p99, accuracy, profile).
 */
import { rmSync } from "node:fs";
import { buildDataPlaneBundle } from "./bundle-report.ts";
import {
  accuracyRun,
  benchBundled,
  buildChild,
  printBundled,
  printProfile,
  profileGateway,
} from "./bundled.ts";
import { startBenchWorld } from "./setup.ts";

const REGION = "us-east-1";

async function main() {
  const world = await startBenchWorld({ name: "Profile", regions: [REGION] });
  const { front, targetUrl, call, api, targetId, targetCredentialId } = world;
  const bundle = await buildDataPlaneBundle().catch(async (error: unknown) => {
    await world.stop();
    throw error;
  });
  try {
    const input = {
      call,
      api,
      region: REGION,
      targetUrl,
      targetId,
      targetCredentialId,
      front: front!,
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
    await world.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
