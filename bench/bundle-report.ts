/**
 * `npm run bundle:report`: the data-plane bundle as Lambda gets it (cdk/bundle.ts options), its
 * size (what a cold start loads, and the chunks loaded on demand), the biggest modules, and the
 * median time to import it in a fresh Node process. The bench prints the same figures, and
 * test/unit/data-plane-bundle.test.ts holds the size limit.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { Metafile } from "esbuild";
import { buildSplitBundle, DATA_PLANE_ENTRY, PROJECT_ROOT } from "../cdk/bundle.ts";

/** Goals of issue 9 ("Cold start"); the size lowered from 300 KiB by issue 25 (headroom). */
export const BUNDLE_LIMIT_BYTES = 280 * 1024;
export const IMPORT_LIMIT_MS = 120;

export interface BundleFigures {
  outdir: string;
  entryFile: string;
  /** The entry and every chunk it imports statically: what a cold start reads and evaluates. */
  startupBytes: number;
  /** Chunks reached only through import(): loaded when a request needs them. */
  lazyBytes: number;
  totalBytes: number;
  /** Input modules by minified bytes in the output, biggest first, grouped by package. */
  startupModules: [string, number][];
  lazyModules: [string, number][];
  /** The input files (paths from the project root) with code in the cold start, and on demand. */
  startupInputs: string[];
  lazyInputs: string[];
  /** Files copied beside their chunks (cdk/bundle.ts RUNTIME_FILES: the QuickJS wasm), absolute. */
  runtimeFiles: string[];
  runtimeBytes: number;
}

/** The package (or repository folder) an input path belongs to. */
function groupOf(path: string): string {
  const match = path.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/);
  if (match) return match[1]!;
  return path.split("/").slice(0, 2).join("/");
}

export function bundleFigures(
  metafile: Metafile,
  outdir: string,
  runtimeFiles: string[] = [],
): BundleFigures {
  const outputs = Object.entries(metafile.outputs).filter(([file]) => file.endsWith(".mjs"));
  // `<outdir>/index.mjs`: chunks reached through import() carry an entryPoint too (output paths
  // are relative to the build's working directory, the project root).
  const entryFile = join(outdir, "index.mjs");
  const entry = outputs.find(([file]) => resolve(PROJECT_ROOT, file) === entryFile);
  if (!entry) throw new Error("The bundle has no entry output");
  const startup = new Set<string>();
  const visit = (file: string) => {
    if (startup.has(file)) return;
    startup.add(file);
    for (const imported of metafile.outputs[file]?.imports ?? [])
      if (imported.kind === "import-statement" && !imported.external) visit(imported.path);
  };
  visit(entry[0]);
  const modules = (files: [string, Metafile["outputs"][string]][]) => {
    const bytes = new Map<string, number>();
    for (const [, output] of files)
      for (const [input, { bytesInOutput }] of Object.entries(output.inputs))
        bytes.set(groupOf(input), (bytes.get(groupOf(input)) ?? 0) + bytesInOutput);
    return [...bytes].filter(([, size]) => size > 0).sort((a, b) => b[1] - a[1]);
  };
  const inputsOf = (files: [string, Metafile["outputs"][string]][]) => [
    ...new Set(
      files.flatMap(([, output]) =>
        Object.entries(output.inputs)
          .filter(([, { bytesInOutput }]) => bytesInOutput > 0)
          .map(([input]) => input),
      ),
    ),
  ];
  const sum = (files: [string, Metafile["outputs"][string]][]) =>
    files.reduce((total, [, output]) => total + output.bytes, 0);
  const startupFiles = outputs.filter(([file]) => startup.has(file));
  const lazyFiles = outputs.filter(([file]) => !startup.has(file));
  return {
    outdir,
    entryFile,
    startupBytes: sum(startupFiles),
    lazyBytes: sum(lazyFiles),
    totalBytes: sum(outputs),
    startupModules: modules(startupFiles),
    lazyModules: modules(lazyFiles),
    startupInputs: inputsOf(startupFiles),
    lazyInputs: inputsOf(lazyFiles),
    runtimeFiles,
    runtimeBytes: runtimeFiles.reduce((total, file) => total + statSync(file).size, 0),
  };
}

/**
 * Build the data-plane asset into a new temporary directory exactly as `cdk synth` does
 * (cdk/bundle.ts buildSplitBundle); the caller removes it.
 */
export async function buildDataPlaneBundle(): Promise<BundleFigures> {
  const outdir = mkdtempSync(join(tmpdir(), "data-plane-bundle-"));
  const { metafile, runtimeFiles } = buildSplitBundle(DATA_PLANE_ENTRY, outdir);
  return bundleFigures(metafile, outdir, runtimeFiles);
}

/**
 * Import the bundle in `runs` fresh `node` processes and return the times (ms, sorted), measured
 * inside each child from just before `import()` to its resolution: module read, parse and
 * evaluation, as Lambda's init does it (process start-up excluded).
 */
export function importTimesMs(entryFile: string, runs = 15): number[] {
  const script = `const t = performance.now(); await import(${JSON.stringify(pathToFileURL(entryFile).href)}); process.stdout.write(String(performance.now() - t));`;
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], {
      env: {
        PATH: process.env.PATH,
        AWS_REGION: "us-east-1",
        AWS_ACCESS_KEY_ID: "bundle",
        AWS_SECRET_ACCESS_KEY: "bundle",
      },
      encoding: "utf8",
    });
    times.push(Number(out));
  }
  return times.sort((a, b) => a - b);
}

export const median = (sorted: number[]) => sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;

const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;

export function printBundleFigures(figures: BundleFigures, importMs: number[], top = 12): void {
  console.log(
    `Data-plane bundle (cdk/bundle.ts: esbuild, minified ESM, split): cold start loads ${kib(figures.startupBytes)} (goal <= ${kib(BUNDLE_LIMIT_BYTES)}), on demand ${kib(figures.lazyBytes)}, total ${kib(figures.totalBytes)}; beside it ${kib(figures.runtimeBytes)} of runtime files (QuickJS wasm, read only when a transform runs)`,
  );
  console.log(
    `  import in a fresh node process: median ${median(importMs).toFixed(0)} ms (goal <= ${IMPORT_LIMIT_MS} ms; ${importMs.length} runs, min ${importMs[0]!.toFixed(0)}, max ${importMs.at(-1)!.toFixed(0)})`,
  );
  console.log("  biggest modules loaded at start:");
  for (const [name, bytes] of figures.startupModules.slice(0, top))
    console.log(`    ${kib(bytes).padStart(10)}  ${name}`);
  console.log("  biggest modules loaded on demand:");
  for (const [name, bytes] of figures.lazyModules.slice(0, top))
    console.log(`    ${kib(bytes).padStart(10)}  ${name}`);
}

async function main() {
  const figures = await buildDataPlaneBundle();
  try {
    printBundleFigures(figures, importTimesMs(figures.entryFile, Number(process.env.IMPORT_RUNS ?? 15)), 25);
  } finally {
    rmSync(figures.outdir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
