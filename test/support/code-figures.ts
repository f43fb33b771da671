/**
 * Structure figures for a closing note: functions over 80 lines and non-null assertions (`x!`) in
 * `lib/`, and upward runtime imports (test/support/import-graph.ts).
 * `npx tsx test/support/code-figures.ts [--list]`.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { ROOT, upwardImports } from "./import-graph.js";

function files(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return files(path);
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith(".d.ts") ? [path] : [];
  });
}

export function codeFigures(dir = "lib") {
  const longFunctions: string[] = [];
  const assertions: string[] = [];
  for (const file of files(dir)) {
    const source = ts.createSourceFile(
      file,
      readFileSync(join(ROOT, file), "utf8"),
      ts.ScriptTarget.Latest,
      true,
    );
    const line = (pos: number) => source.getLineAndCharacterOfPosition(pos).line + 1;
    const visit = (node: ts.Node) => {
      if (ts.isNonNullExpression(node)) assertions.push(`${file}:${line(node.getStart())}`);
      if (ts.isFunctionLike(node) && "body" in node && node.body) {
        const lines = line(node.body.getEnd()) - line(node.getStart()) + 1;
        if (lines > 80) longFunctions.push(`${file}:${line(node.getStart())} (${lines} lines)`);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return { longFunctions, assertions, upward: upwardImports() };
}

if (process.argv[1]?.endsWith("code-figures.ts")) {
  const { longFunctions, assertions, upward } = codeFigures();
  console.log(`upward runtime imports: ${upward.length}`);
  console.log(`functions over 80 lines in lib/: ${longFunctions.length}`);
  console.log(`non-null assertions in lib/: ${assertions.length}`);
  if (process.argv.includes("--list")) {
    for (const entry of longFunctions) console.log(`  long ${entry}`);
    for (const entry of assertions) console.log(`  ! ${entry}`);
  }
}
