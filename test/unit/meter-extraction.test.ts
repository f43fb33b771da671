/** The value a response_value meter adds (lib/domain/meters/extraction.ts). */
import { describe, expect, it } from "vitest";
import {
  type Extraction,
  extractResponseValue,
  MAX_EXTRACTION_BODY_BYTES,
  numericValue,
} from "#lib/domain/meters/extraction.ts";

const json = (value: unknown, contentType = "application/json") => ({
  headers: { "content-type": contentType },
  body: Buffer.from(JSON.stringify(value)),
});

const usage = { usage: { total_tokens: 1234, prompt: "12", parts: [{ n: 3 }] } };
const body = (path: string, defaultValue?: number): Extraction => ({ location: "body", path, defaultValue });
const header = (headerName: string, defaultValue?: number): Extraction => ({
  location: "header",
  headerName,
  defaultValue,
});

describe("numericValue", () => {
  it("finite numbers and plain decimal strings", () => {
    expect(numericValue(12)).toBe(12);
    expect(numericValue(0.5)).toBe(0.5);
    expect(numericValue("12")).toBe(12);
    expect(numericValue(" 1.5 ")).toBe(1.5);
    expect(numericValue("2e3")).toBe(2000);
    expect(numericValue(".5")).toBe(0.5);
    expect(numericValue("-3")).toBe(-3);
  });

  it("anything else is absent", () => {
    for (const value of [
      "",
      " ",
      "0x10",
      "Infinity",
      "NaN",
      "12 tokens",
      "1,000",
      "1e999",
      Number.NaN,
      Number.POSITIVE_INFINITY,
      null,
      true,
      [1],
      { n: 1 },
      undefined,
    ])
      expect(numericValue(value)).toBeUndefined();
  });
});

describe("extractResponseValue", () => {
  it("reads a dot path of the JSON body", () => {
    expect(extractResponseValue(body("usage.total_tokens"), json(usage))).toBe(1234);
    expect(extractResponseValue(body("usage.prompt"), json(usage))).toBe(12);
    expect(extractResponseValue(body("usage.parts.0.n"), json(usage))).toBe(3);
  });

  it("reads a header, case-insensitively, its first value", () => {
    const response = { headers: { "X-Tokens-Used": "42", "x-multi": ["7", "9"] } };
    expect(extractResponseValue(header("x-tokens-used"), response)).toBe(42);
    expect(extractResponseValue(header("X-TOKENS-USED"), response)).toBe(42);
    expect(extractResponseValue(header("x-multi"), response)).toBe(7);
  });

  it("absent or non-numeric: the default value, else 0", () => {
    expect(extractResponseValue(body("usage.missing", 5), json(usage))).toBe(5);
    expect(extractResponseValue(body("usage.missing"), json(usage))).toBe(0);
    expect(extractResponseValue(body("usage", 5), json(usage))).toBe(5);
    expect(
      extractResponseValue(body("usage.total_tokens", 5), json({ usage: { total_tokens: "many" } })),
    ).toBe(5);
    expect(extractResponseValue(header("x-none", 2), { headers: {} })).toBe(2);
    expect(extractResponseValue(header("x-n", 2), { headers: { "x-n": "abc" } })).toBe(2);
  });

  it("a body that is not JSON, of another type, missing or too large counts as absent", () => {
    const e = body("usage.total_tokens", 9);
    expect(extractResponseValue(e, { headers: {}, body: Buffer.from("not json") })).toBe(9);
    expect(extractResponseValue(e, json(usage, "text/html"))).toBe(9);
    expect(extractResponseValue(e, { headers: {} })).toBe(9);
    const big = { usage: { total_tokens: 1 }, pad: "p".repeat(MAX_EXTRACTION_BODY_BYTES) };
    expect(extractResponseValue(e, json(big))).toBe(9);
    // A JSON body without content type is read; contentType given separately wins.
    expect(extractResponseValue(e, { headers: {}, body: JSON.stringify(usage) })).toBe(1234);
    expect(extractResponseValue(e, { ...json(usage, "text/plain"), contentType: "application/json" })).toBe(
      1234,
    );
  });

  it("a negative value counts as 0, extracted or default", () => {
    expect(extractResponseValue(body("n"), json({ n: -5 }))).toBe(0);
    expect(extractResponseValue(body("n", -3), json({}))).toBe(0);
    expect(Object.is(extractResponseValue(body("n"), json({ n: -0 })), 0)).toBe(true);
  });

  it("a non-finite default counts as absent", () => {
    expect(extractResponseValue(body("n", Number.NaN), json({}))).toBe(0);
  });

  it("never reads the prototype", () => {
    expect(extractResponseValue(body("constructor.length", 1), json({}))).toBe(1);
    expect(extractResponseValue(body("items.length", 1), json({ items: [1, 2, 3] }))).toBe(1);
  });
});
