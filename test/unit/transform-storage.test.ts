/** Transform code storage (docs/transforms.md "Storage"): gzip + base64, inline or chunked, exact round-trip. */
import { describe, expect, it } from "vitest";
import { CODE_CHUNK_CHARS, decodeCode, encodeCode, storedCode } from "#lib/db/entities/transform.ts";
import { MAX_TRANSFORM_CODE_BYTES } from "#lib/domain/transforms/code.ts";
import { codeOfBytes } from "../support/transform-code.ts";

describe("transform code storage", () => {
  it("keeps small code inline", () => {
    const bundle = { source: "export default (c, r) => r" };
    const { inline, chunks } = encodeCode(bundle);
    expect(chunks).toEqual([]);
    expect(decodeCode([inline as string])).toEqual(bundle);
  });

  it("chunks 512 KB of incompressible code and restores it exactly", () => {
    const source = codeOfBytes(MAX_TRANSFORM_CODE_BYTES);
    const { inline, chunks } = encodeCode({ source });
    expect(inline).toBeUndefined();
    expect(chunks).toHaveLength(2);
    for (const chunk of chunks) expect(chunk.length).toBeLessThanOrEqual(CODE_CHUNK_CHARS);
    expect(decodeCode(chunks).source).toBe(source);
  });

  it("the worst case (TypeScript whose JavaScript differs) stays within 4 chunk items under 400 KB", () => {
    const source = `const a: number = 1;\n${codeOfBytes(MAX_TRANSFORM_CODE_BYTES - 30)}`;
    const javascript = source.replace(": number", "");
    const stored = storedCode("c", "response", "p", "t", 3, { source, javascript });
    expect(stored.chunks).toHaveLength(4);
    expect(stored.fields).toMatchObject({
      codeChunks: 4,
      codeVersion: 3,
      codeBytes: MAX_TRANSFORM_CODE_BYTES - 9,
    });
    expect(stored.chunks.map((chunk) => chunk.sKey)).toEqual(
      [0, 1, 2, 3].map((n) => `TRANSFORM#RESPONSE#p#t#CODE#${n}`),
    );
    for (const chunk of stored.chunks)
      expect(Buffer.byteLength(JSON.stringify(chunk))).toBeLessThan(400 * 1024);
    expect(decodeCode(stored.chunks.map((chunk) => chunk.data))).toEqual({ source, javascript });
  });
});
