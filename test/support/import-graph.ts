/**
 * The import graph of `functions/` and `lib/`, and the layering rule of docs/architecture.md:
 *
 *   functions → {api, mcp, oauth, http} → data-plane → {domain, streams} → vault → db → leaves
 *
 * A runtime import (static, re-export or dynamic `import()`) may only point to its own layer or a
 * lower one. Type-only imports (`import type`, or an import whose every name is `type`) are erased
 * by the compiler and do not count. `npx tsx test/support/import-graph.ts` prints the report.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";

export const ROOT = resolve(dirname(new URL(import.meta.url).pathname), "../..");

/** Layers from the top (0) down. A path prefix (relative to the root) names its layer. */
export const LAYERS: ReadonlyArray<{ name: string; prefixes: string[] }> = [
  { name: "functions", prefixes: ["functions/"] },
  { name: "api, mcp, oauth, http", prefixes: ["lib/api/", "lib/mcp/", "lib/oauth/", "lib/http/"] },
  { name: "data-plane", prefixes: ["lib/data-plane/"] },
  { name: "domain, streams", prefixes: ["lib/domain/", "lib/streams/"] },
  { name: "vault", prefixes: ["lib/vault/"] },
  { name: "db", prefixes: ["lib/db/"] },
  {
    name: "leaves (aws, net, config, infra, log)",
    prefixes: [
      "lib/aws/",
      "lib/net/",
      "lib/infra/",
      "lib/shared/",
      "lib/clock.ts",
      "lib/config.ts",
      "lib/account-config.ts",
      "lib/app-url.ts",
      "lib/log.ts",
      "lib/log-backend.ts",
      "lib/lazy.ts",
      "lib/email.ts",
    ],
  },
];

export function layerOf(file: string): number | undefined {
  const index = LAYERS.findIndex((layer) => layer.prefixes.some((prefix) => file.startsWith(prefix)));
  return index === -1 ? undefined : index;
}

export interface RuntimeImport {
  from: string;
  to: string;
  names: string[];
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) out.push(...sourceFiles(path));
    else if (/\.tsx?$/.test(entry.name) && !entry.name.endsWith(".d.ts")) out.push(path);
  }
  return out;
}

function resolveSpecifier(from: string, specifier: string): string | undefined {
  let target: string;
  if (specifier.startsWith("#lib/")) target = `lib/${specifier.slice(5)}`;
  else if (specifier.startsWith("#functions/")) target = `functions/${specifier.slice(11)}`;
  else if (specifier.startsWith(".")) target = relative(ROOT, resolve(ROOT, dirname(from), specifier));
  else return undefined;
  return target.replace(/\.js$/, ".ts");
}

function importedNames(clause: ts.ImportClause | undefined): { names: string[]; typeOnly: boolean } {
  if (!clause) return { names: ["(side effect)"], typeOnly: false };
  if (clause.isTypeOnly) return { names: [], typeOnly: true };
  const names: string[] = [];
  let runtime = false;
  if (clause.name) {
    names.push(clause.name.text);
    runtime = true;
  }
  const bindings = clause.namedBindings;
  if (bindings && ts.isNamespaceImport(bindings)) {
    names.push(`* as ${bindings.name.text}`);
    runtime = true;
  } else if (bindings) {
    for (const element of bindings.elements) {
      if (element.isTypeOnly) continue;
      names.push(element.name.text);
      runtime = true;
    }
  }
  return { names, typeOnly: !runtime };
}

/** Every runtime import between files of `functions/` and `lib/`. */
export function runtimeImports(): RuntimeImport[] {
  const out: RuntimeImport[] = [];
  for (const file of [...sourceFiles("functions"), ...sourceFiles("lib")]) {
    const text = readFileSync(join(ROOT, file), "utf8");
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
    const add = (specifier: string, names: string[]) => {
      const to = resolveSpecifier(file, specifier);
      if (to) out.push({ from: file, to, names });
    };
    const visit = (node: ts.Node) => {
      if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
        const { names, typeOnly } = importedNames(node.importClause);
        if (!typeOnly) add(node.moduleSpecifier.text, names);
      } else if (
        ts.isExportDeclaration(node) &&
        node.moduleSpecifier &&
        ts.isStringLiteral(node.moduleSpecifier)
      ) {
        if (node.isTypeOnly) return;
        const clause = node.exportClause;
        const names =
          clause && ts.isNamedExports(clause)
            ? clause.elements.filter((e) => !e.isTypeOnly).map((e) => e.name.text)
            : ["*"];
        if (names.length > 0) add(node.moduleSpecifier.text, names);
      } else if (
        ts.isCallExpression(node) &&
        node.expression.kind === ts.SyntaxKind.ImportKeyword &&
        node.arguments[0] &&
        ts.isStringLiteral(node.arguments[0])
      ) {
        add(node.arguments[0].text, ["import()"]);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return out;
}

/** Runtime imports that point to a higher layer than their own. */
export function upwardImports(): RuntimeImport[] {
  return runtimeImports().filter((edge) => {
    const from = layerOf(edge.from);
    const to = layerOf(edge.to);
    return from !== undefined && to !== undefined && to < from;
  });
}

/** Files of `functions/` and `lib/` that no layer names. */
export function unlayeredFiles(): string[] {
  return [...sourceFiles("functions"), ...sourceFiles("lib")].filter((file) => layerOf(file) === undefined);
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname)) {
  const upward = upwardImports();
  const byPair = new Map<string, number>();
  for (const edge of upward) {
    const key = `${LAYERS[layerOf(edge.from) ?? 0]?.name} -> ${LAYERS[layerOf(edge.to) ?? 0]?.name}`;
    byPair.set(key, (byPair.get(key) ?? 0) + 1);
  }
  console.log(`upward runtime imports: ${upward.length}`);
  for (const [pair, count] of [...byPair].sort((a, b) => b[1] - a[1])) console.log(`  ${count}\t${pair}`);
  if (process.argv.includes("--list"))
    for (const edge of upward) console.log(`${edge.from} -> ${edge.to}: ${edge.names.join(", ")}`);
  const unlayered = unlayeredFiles();
  if (unlayered.length > 0) console.log(`files in no layer: ${unlayered.join(", ")}`);
}
