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
import { copyFileSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type BuildOptions, buildSync, type Metafile } from "esbuild";

/** Repository root (cdk/ is one level below it). */
export const PROJECT_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

/** Matches the Lambda runtime of constructs/gateway-function.ts (NODEJS_24_X). */
export const ESBUILD_TARGET = "node24";
/** ESM first: the SDK's dist-es tree-shakes; its CommonJS build drags in browser code (bowser). */
export const MAIN_FIELDS = ["module", "main"];
/** Bundled CommonJS dependencies may call require(); ESM has none, so define one. */
export const ESM_REQUIRE_BANNER =
  "import { createRequire as __gatewayCreateRequire } from 'node:module'; const require = __gatewayCreateRequire(import.meta.url);";

/**
 * Modules swapped in the data-plane bundle (never run there, or replaced by a smaller equivalent;
 * docs/performance.md has the bytes each saves). An alias replaces a package path only (a relative
 * import inside a package cannot be swapped), and esbuild fails the build when the replacement
 * lacks a name some bundled module imports.
 */
export const DATA_PLANE_ALIASES: Record<string, string> = {
  "@aws-sdk/credential-provider-node": join(PROJECT_ROOT, "lib", "aws", "env-credentials.ts"),
  // The endpoint-discovery cache every DynamoDB client builds (discovery is off): a Map.
  "mnemonist/lru-cache": join(PROJECT_ROOT, "lib", "aws", "lru-cache.ts"),
  // SHA-256 and CRC-32 from node:crypto and node:zlib, without the JavaScript fallbacks.
  "@smithy/core/checksum": join(PROJECT_ROOT, "lib", "aws", "sha256.ts"),
};

/**
 * What an output file of a bundle calls when bundled code reaches esbuild's `__require` shim (a
 * CommonJS `require()` of a module left outside the bundle): ESM has no `require`, so the shim
 * throws this at run time unless ESM_REQUIRE_BANNER defines one. The data-plane bundle has none
 * and carries no banner (it would add 134 bytes to each of its 20 cold-start files);
 * buildSplitBundle fails when one appears.
 */
export const DYNAMIC_REQUIRE_SHIM = "Dynamic require of";

/** The data plane's entry point. */
export const DATA_PLANE_ENTRY = join(PROJECT_ROOT, "functions", "data-plane.ts");

/**
 * The transform sandbox (lib/data-plane/sandbox.ts), built as a second entry point of the split
 * bundle: `<outdir>/sandbox.mjs`, never imported statically by `index.mjs` (an `import()` of
 * sandbox.ts anywhere in the data plane resolves to that same file), so the asset always carries
 * it and a cold start never reads it.
 */
export const SANDBOX_ENTRY = join(PROJECT_ROOT, "lib", "data-plane", "sandbox.ts");

/**
 * The sandbox's worker thread (lib/data-plane/sandbox-worker.ts: QuickJS itself), a third entry:
 * `<outdir>/sandbox-worker.mjs`, which `sandbox.mjs` starts as
 * `new Worker(new URL("./sandbox-worker.mjs", import.meta.url))`, so both must sit at the root of
 * the output. Only the worker imports QuickJS.
 */
export const SANDBOX_WORKER_ENTRY = join(PROJECT_ROOT, "lib", "data-plane", "sandbox-worker.ts");

/** The entries beside `index`: each is loaded on demand, never by a cold start. */
export const LAZY_ENTRIES: Record<string, string> = {
  sandbox: SANDBOX_ENTRY,
  "sandbox-worker": SANDBOX_WORKER_ENTRY,
};

/**
 * Files that bundled code reads beside itself at run time, by the input module that reads them:
 * QuickJS's emscripten loader fetches `new URL("emscripten-module.wasm", import.meta.url)`, which
 * esbuild leaves as it is, so the 519 KB wasm must sit next to the output chunk holding that code.
 */
export const RUNTIME_FILES: { module: string; file: string; name: string }[] = [
  {
    module: "@jitl/quickjs-wasmfile-release-sync/dist/emscripten-module.mjs",
    file: "@jitl/quickjs-wasmfile-release-sync/wasm",
    name: "emscripten-module.wasm",
  },
];

const requireFromRoot = createRequire(join(PROJECT_ROOT, "package.json"));

/**
 * Options of a split ESM bundle: `<outdir>/index.mjs` (handler `index.handler`), its source map,
 * and `<outdir>/chunks/*.mjs` loaded on demand.
 */
export function splitBundleOptions(
  entry: string,
  outdir: string,
  lazyEntries: Record<string, string> = LAZY_ENTRIES,
): BuildOptions {
  return {
    entryPoints: { index: entry, ...lazyEntries },
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
    alias: DATA_PLANE_ALIASES,
    absWorkingDir: PROJECT_ROOT,
    logLevel: "warning",
    metafile: true,
  };
}

/**
 * Copies each RUNTIME_FILES file next to every output that bundles its module (from the build's
 * metafile). Returns the files written, absolute. Fails when a module is bundled but its file is
 * missing from node_modules.
 */
export function copyRuntimeFiles(metafile: Metafile): string[] {
  const written: string[] = [];
  for (const [output, { inputs }] of Object.entries(metafile.outputs)) {
    if (!output.endsWith(".mjs")) continue;
    for (const runtime of RUNTIME_FILES) {
      if (!Object.keys(inputs).some((input) => input.endsWith(`node_modules/${runtime.module}`))) continue;
      const target = join(dirname(resolve(PROJECT_ROOT, output)), runtime.name);
      copyFileSync(requireFromRoot.resolve(runtime.file), target);
      written.push(target);
    }
  }
  return written;
}

/**
 * The data plane's Lambda asset, exactly as `cdk synth` builds it (constructs/gateway-function.ts
 * calls this): the split bundle into `outdir`, then the runtime files beside their chunks.
 */
export function buildSplitBundle(
  entry: string,
  outdir: string,
): { metafile: Metafile; runtimeFiles: string[] } {
  const metafile = buildSync(splitBundleOptions(entry, outdir)).metafile!;
  for (const output of Object.keys(metafile.outputs))
    if (
      output.endsWith(".mjs") &&
      readFileSync(resolve(PROJECT_ROOT, output), "utf8").includes(DYNAMIC_REQUIRE_SHIM)
    )
      throw new Error(
        `${output} calls require() (esbuild's shim: "${DYNAMIC_REQUIRE_SHIM}"), which the split ESM bundle does not define: import the module instead, or add ESM_REQUIRE_BANNER back to splitBundleOptions`,
      );
  return { metafile, runtimeFiles: copyRuntimeFiles(metafile) };
}

/** Reads a file of an installed package (tests compare the asset's copy with it). */
export function packageFile(specifier: string): Buffer {
  return readFileSync(requireFromRoot.resolve(specifier));
}
