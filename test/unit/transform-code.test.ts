import { describe, expect, it } from "vitest";
import { codeBytes, MAX_TRANSFORM_CODE_BYTES, prepareTransformCode } from "#lib/domain/transforms/code.ts";
import { codeOfBytes } from "../support/transform-code.ts";

const errorsOf = (source: string) => {
  const result = prepareTransformCode(source);
  if (result.ok) throw new Error("expected a refusal");
  return result.errors;
};

describe("prepareTransformCode", () => {
  it("accepts each kind of function default export, async too", () => {
    for (const source of [
      "export default function (context, request) { return request }",
      "export default async function named(context, request) { return request }",
      "export default (context, request) => request",
      "export default async (context, request) => request",
      "export default (function (context, request) { return request })",
    ])
      expect(prepareTransformCode(source), source).toMatchObject({ ok: true });
  });

  it("turns TypeScript into JavaScript and keeps the ES module default export", () => {
    const source = [
      "interface Req { headers: Record<string, string> }",
      "type Ctx = { proxyId: string };",
      "export default async function (context: Ctx, request: Req): Promise<Req> {",
      "  const tag: string = context.proxyId as string;",
      "  return { ...request, headers: { ...request.headers, 'x-tag': tag } };",
      "}",
    ].join("\n");
    const result = prepareTransformCode(source);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.javascript).toContain("export default async function (context, request) {");
    expect(result.javascript).not.toMatch(/interface|: Ctx|as string/);
    // sucrase keeps every line in place: the positions of problems name the user's lines.
    expect(result.javascript.split("\n")).toHaveLength(source.split("\n").length);
  });

  it("answers a syntax error with its line and column (JavaScript and TypeScript)", () => {
    expect(errorsOf("export default function (c, r) {\n  let x = ;\n}")).toEqual([
      "Line 2, column 11: syntax error: Unexpected token",
    ]);
    expect(errorsOf("const a: = 1;\nexport default () => 1")).toEqual([
      "Line 1, column 10: syntax error: Unexpected token",
    ]);
  });

  it("refuses a module without a default export", () => {
    expect(errorsOf("export function handle(c, r) { return r }")).toEqual([
      "Line 1, column 1: no default export: the code must export a function (export default function (context, ...) {...})",
    ]);
  });

  it("refuses a default export that is not a function (export { x as default } included: the rule is syntactic)", () => {
    const cases: [string, string][] = [
      ["export default 42", "Line 1, column 16"],
      ["export default class A {}", "Line 1, column 16"],
      ["\nexport default { run() {} }", "Line 2, column 16"],
      ["const x = 1\nexport { x as default }", "Line 2, column 15"],
    ];
    for (const [source, at] of cases)
      expect(errorsOf(source), source).toEqual([
        `${at}: the default export must be a function (export default function (context, ...) {...})`,
      ]);
  });

  it("refuses imports, require() and dynamic import() (TypeScript imports too, used or not)", () => {
    expect(errorsOf("import x from 'y'\nexport default () => x")).toEqual([
      "Line 1, column 1: import declarations are not allowed",
    ]);
    expect(errorsOf("import { unused } from 'y'\nexport default (c: unknown) => c")).toEqual([
      "Line 1, column 1: import declarations are not allowed",
    ]);
    expect(errorsOf("export default function () {\n  return require('fs')\n}")).toEqual([
      "Line 2, column 10: require() is not allowed",
    ]);
    expect(errorsOf("export default async function () {\n  return import('fs')\n}")).toEqual([
      "Line 2, column 10: dynamic import() is not allowed",
    ]);
    expect(errorsOf("export * from 'y'\nexport default () => 1")).toEqual([
      "Line 1, column 1: re-exports from other modules are not allowed",
    ]);
  });

  it("refuses each reference to process, fetch, globalThis, eval, Function and require", () => {
    for (const name of ["process", "fetch", "globalThis", "eval", "Function", "require"])
      expect(errorsOf(`export default function (c, r) {\n  const v = ${name};\n  return r\n}`), name).toEqual(
        [`Line 2, column 13: ${name} is not available in transforms`],
      );
    // Several problems: one line each, in source order.
    expect(errorsOf("export default (c) => [process.env, fetch(c), new Function('x')]")).toEqual([
      "Line 1, column 24: process is not available in transforms",
      "Line 1, column 37: fetch is not available in transforms",
      "Line 1, column 51: Function is not available in transforms",
    ]);
  });

  it("allows the names as property keys and member names, refuses them as bindings", () => {
    expect(
      prepareTransformCode(
        "export default (c, r) => ({ process: 1, fetch: c.fetch, eval() {}, x: r.headers.globalThis, [`Function`]: 1 })",
      ),
    ).toMatchObject({ ok: true });
    expect(errorsOf("export default (c) => { const fetch = 1; process = 2; return c }")).toEqual([
      "Line 1, column 31: fetch is not available in transforms",
      "Line 1, column 42: process is not available in transforms",
    ]);
    expect(errorsOf("export default (c) => ({ process })")).toEqual([
      "Line 1, column 26: process is not available in transforms",
    ]);
  });

  it("names the user's line in TypeScript (columns with the types removed)", () => {
    const errors = errorsOf(
      "type A = { a: number }\n\nexport default function (c: A): A {\n  const v: number = process.env.X as unknown as number;\n  return c\n}",
    );
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^Line 4, column \d+: process is not available in transforms$/);
  });

  it("accepts 512 KB exactly (incompressible) and refuses one byte more", () => {
    const max = codeOfBytes(MAX_TRANSFORM_CODE_BYTES);
    expect(codeBytes(max)).toBe(MAX_TRANSFORM_CODE_BYTES);
    const accepted = prepareTransformCode(max);
    expect(accepted.ok).toBe(true);
    if (accepted.ok) expect(accepted.javascript).toBe(max);
    const over = codeOfBytes(MAX_TRANSFORM_CODE_BYTES + 1);
    expect(errorsOf(over)).toEqual(["code is over 524288 bytes (512 KB) of UTF-8"]);
    // Bytes, not characters: 2-byte characters count twice.
    const wide = `export default () => "${"é".repeat(MAX_TRANSFORM_CODE_BYTES / 2)}"`;
    expect(prepareTransformCode(wide).ok).toBe(false);
  });
});
