/**
 * esbuild options of the Lambda bundles, in one place: the CDK construct (constructs/
 * gateway-function.ts), `npm run bundle:report`, the bench and the bundle test all build with them.
 *
 * The data plane is built by our own esbuild call (NodejsFunction always passes `--outfile`,
 * which excludes code splitting): ESM with `splitting`, so modules reached only through `import()`
 * (jose, re2js, the KMS client) land in chunks that a cold start does not load, and the SDK's
 * default credential chain replaced by the environment (lib/aws/env-credentials.ts).
 * No aws-cdk-lib import here: the bench and tests load this module cheaply.
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { BuildOptions } from "esbuild";

/** Repository root (cdk/ is one level below it). */
export const PROJECT_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

/** Matches the Lambda runtime of constructs/gateway-function.ts (NODEJS_24_X). */
export const ESBUILD_TARGET = "node24";
/** ESM first: the SDK's dist-es tree-shakes; its CommonJS build drags in browser code (bowser). */
export const MAIN_FIELDS = ["module", "main"];
/** Bundled CommonJS dependencies may call require(); ESM has none, so define one. */
export const ESM_REQUIRE_BANNER =
  "import { createRequire as __gatewayCreateRequire } from 'node:module'; const require = __gatewayCreateRequire(import.meta.url);";

/** Modules swapped in the data-plane bundle (never run there, or replaced by a smaller equivalent). */
export const DATA_PLANE_ALIASES: Record<string, string> = {
  "@aws-sdk/credential-provider-node": join(PROJECT_ROOT, "lib", "aws", "env-credentials.ts"),
};

/** The data plane's entry point. */
export const DATA_PLANE_ENTRY = join(PROJECT_ROOT, "functions", "data-plane.ts");

/**
 * Options of a split ESM bundle: `<outdir>/index.mjs` (handler `index.handler`), its source map,
 * and `<outdir>/chunks/*.mjs` loaded on demand.
 */
export function splitBundleOptions(entry: string, outdir: string): BuildOptions {
  return {
    entryPoints: { index: entry },
    outdir,
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: ESBUILD_TARGET,
    mainFields: MAIN_FIELDS,
    minify: true,
    sourcemap: true,
    sourcesContent: false,
    outExtension: { ".js": ".mjs" },
    chunkNames: "chunks/[name]-[hash]",
    banner: { js: ESM_REQUIRE_BANNER },
    alias: DATA_PLANE_ALIASES,
    absWorkingDir: PROJECT_ROOT,
    logLevel: "warning",
    metafile: true,
  };
}
