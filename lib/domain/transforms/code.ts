/**
 * Saving a transform's code (spec 2.10, issue 10 "Saving code"): TypeScript or JavaScript up to
 * MAX_TRANSFORM_CODE_BYTES, turned into JavaScript with sucrase and validated on its AST (acorn +
 * acorn-walk), never with regular expressions. Pure: no I/O. docs/transforms.md ("Code rules").
 *
 * Positions: sucrase keeps every line where it was (it removes types in place and never joins or
 * splits lines; test/unit/transform-code.test.ts proves it), so the rules run on the JavaScript
 * that will run and each problem names the line of the user's source. Columns are exact for
 * JavaScript; in a TypeScript line with types before the problem they are the column in the
 * line with its types removed. A syntax error of the TypeScript itself is sucrase's, at the
 * user's line and column.
 */
import { type Node, parse } from "acorn";
import { type SimpleVisitors, simple } from "acorn-walk";
import { transform } from "sucrase";

/** Most UTF-8 bytes of a transform's code (512 KB). */
export const MAX_TRANSFORM_CODE_BYTES = 512 * 1024;

/** Names user code may not refer to: the sandbox has none of them (or they escape it). */
export const FORBIDDEN_GLOBALS = ["process", "fetch", "globalThis", "eval", "Function", "require"] as const;

export const TRANSFORM_CODE_MESSAGE = "Transform code failed validation";

export type PreparedCode = { ok: true; javascript: string } | { ok: false; errors: string[] };

export const codeBytes = (source: string) => Buffer.byteLength(source, "utf8");

const at = (line: number, column: number) => `Line ${line}, column ${column + 1}`;

interface Located {
  loc?: { start: { line: number; column: number } } | null;
}
const where = (node: Located) =>
  node.loc ? at(node.loc.start.line, node.loc.start.column) : "Line 1, column 1";

/** TypeScript (or JavaScript) to JavaScript, ES module kept; a syntax error at the source's position. */
function transpile(source: string): { javascript: string } | { error: string } {
  try {
    const { code } = transform(source, { transforms: ["typescript"], keepUnusedImports: true });
    return { javascript: code };
  } catch (error) {
    const loc = (error as { loc?: { line: number; column: number } }).loc;
    const message = (error instanceof Error ? error.message : String(error)).replace(/\s*\(\d+:\d+\)$/, "");
    // sucrase's column counts from 1 (acorn's from 0).
    return { error: `${loc ? at(loc.line, loc.column - 1) : "Line 1, column 1"}: syntax error: ${message}` };
  }
}

const FUNCTION_TYPES = new Set(["FunctionDeclaration", "FunctionExpression", "ArrowFunctionExpression"]);

/** The rule problems of a parsed module, in source order. */
function ruleProblems(program: Node): string[] {
  const problems: { pos: number; text: string }[] = [];
  const add = (node: Node, text: string) =>
    problems.push({ pos: node.start, text: `${where(node)}: ${text}` });
  const forbidden = new Set<string>(FORBIDDEN_GLOBALS);
  const requireCallees = new Set<Node>();
  let defaultExports = 0;

  const body = (program as Node & { body: Node[] }).body;
  for (const statement of body) {
    if (statement.type === "ExportDefaultDeclaration") {
      defaultExports++;
      const declaration = (statement as Node & { declaration: Node }).declaration;
      if (!FUNCTION_TYPES.has(declaration.type))
        add(
          declaration,
          "the default export must be a function (export default function (context, ...) {...})",
        );
    }
    if (statement.type === "ExportNamedDeclaration") {
      const specifiers = (
        statement as Node & { specifiers: { exported: Node & { name?: string; value?: string } }[] }
      ).specifiers;
      for (const { exported } of specifiers)
        if ((exported.name ?? exported.value) === "default") {
          defaultExports++;
          add(
            exported,
            "the default export must be a function (export default function (context, ...) {...})",
          );
        }
    }
  }

  // acorn-walk visits children before their parent: identifiers are judged after the walk.
  const references: Node[] = [];
  // VariablePattern (a binding or assignment target) is walked by acorn-walk but not in its types.
  const visitors: Record<string, (node: Node) => void> = {
    ImportDeclaration: (node) => add(node, "import declarations are not allowed"),
    ImportExpression: (node) => add(node, "dynamic import() is not allowed"),
    CallExpression: (node) => {
      const callee = (node as Node & { callee: Node & { name?: string } }).callee;
      if (callee.type === "Identifier" && callee.name === "require") {
        requireCallees.add(callee);
        add(node, "require() is not allowed");
      }
    },
    ExportAllDeclaration: (node) => add(node, "re-exports from other modules are not allowed"),
    ExportNamedDeclaration: (node) => {
      if ((node as Node & { source?: Node | null }).source)
        add(node, "re-exports from other modules are not allowed");
    },
    Identifier: (node) => {
      const name = (node as Node & { name: string }).name;
      if (forbidden.has(name)) references.push(node);
    },
    // Declarations and assignment targets (`const fetch = ...`, `process = ...`): the names are reserved.
    VariablePattern: (node) => {
      const name = (node as Node & { name: string }).name;
      if (forbidden.has(name)) add(node, `${name} is not available in transforms`);
    },
  };
  simple(program, visitors as SimpleVisitors<unknown>);
  for (const node of references)
    if (!requireCallees.has(node))
      add(node, `${(node as Node & { name: string }).name} is not available in transforms`);
  if (defaultExports === 0)
    problems.push({
      pos: -1,
      text: "Line 1, column 1: no default export: the code must export a function (export default function (context, ...) {...})",
    });
  return problems.sort((a, b) => a.pos - b.pos).map((problem) => problem.text);
}

/**
 * Accept TypeScript or JavaScript: the JavaScript to store and run, or one readable line per
 * problem (`Line <n>, column <m>: ...`). The size bound is checked by the body schema (a 400
 * naming `code`) and again here.
 */
export function prepareTransformCode(source: string): PreparedCode {
  if (codeBytes(source) > MAX_TRANSFORM_CODE_BYTES)
    return { ok: false, errors: [`code is over ${MAX_TRANSFORM_CODE_BYTES} bytes (512 KB) of UTF-8`] };
  const transpiled = transpile(source);
  if ("error" in transpiled) return { ok: false, errors: [transpiled.error] };
  let program: Node;
  try {
    program = parse(transpiled.javascript, { ecmaVersion: "latest", sourceType: "module", locations: true });
  } catch (error) {
    const loc = (error as { loc?: { line: number; column: number } }).loc;
    const message = (error instanceof Error ? error.message : String(error)).replace(/\s*\(\d+:\d+\)$/, "");
    return {
      ok: false,
      errors: [`${loc ? at(loc.line, loc.column) : "Line 1, column 1"}: syntax error: ${message}`],
    };
  }
  const errors = ruleProblems(program);
  return errors.length > 0 ? { ok: false, errors } : { ok: true, javascript: transpiled.javascript };
}
