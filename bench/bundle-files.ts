/** Per input file, the bytes it puts into the data plane's cold-start chunks (for finding growth). */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { buildSplitBundle } from "../cdk/bundle.ts";

const outdir = mkdtempSync(join(tmpdir(), "bundle-files-"));
const { metafile } = buildSplitBundle(resolve("functions/data-plane.ts"), outdir);
const outputs = metafile.outputs;
const entry = Object.keys(outputs).find((file) => resolve(file) === join(outdir, "index.mjs"));
const startup = new Set<string>();
const visit = (file: string) => {
  if (startup.has(file)) return;
  startup.add(file);
  for (const imported of outputs[file]?.imports ?? [])
    if (imported.kind === "import-statement" && !imported.external) visit(imported.path);
};
if (entry) visit(entry);
const bytes = new Map<string, number>();
let chunks = 0;
for (const file of startup) {
  if (!file.endsWith(".mjs")) continue;
  chunks++;
  for (const [input, { bytesInOutput }] of Object.entries(outputs[file]?.inputs ?? {}))
    if (!input.includes("node_modules")) bytes.set(input, (bytes.get(input) ?? 0) + bytesInOutput);
}
console.log(`chunks ${chunks}`);
for (const [input, size] of [...bytes].sort()) console.log(`${size}\t${input}`);
rmSync(outdir, { recursive: true, force: true });
