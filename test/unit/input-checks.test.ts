/** The root checks of every Core API input (lib/http/input-checks.ts) and the local gateway's maps. */
import { describe, expect, it } from "vitest";
import { VALIDATION_MESSAGE } from "#lib/http/errors.ts";
import {
  decodePathParameter,
  isWellFormed,
  jsonInputIssues,
  MAX_JSON_DEPTH,
  parseJsonInput,
  queryIssues,
  storedDocumentIssues,
} from "#lib/http/input-checks.ts";
import { AdditionalData } from "#lib/http/resource-schemas.ts";
import { parseInput } from "#lib/http/validation.ts";
import { splitTarget, valueMaps } from "#local/api-gateway.ts";
import { errorOf } from "../support/errors.ts";

/** `levels` nested objects: {"a":{"a":...{"a":"x"}}}. */
const nested = (levels: number) => `${'{"a":'.repeat(levels)}"x"${"}".repeat(levels)}`;

describe("isWellFormed", () => {
  it("refuses lone surrogates only", () => {
    expect(isWellFormed("plain ✓ 😀")).toBe(true);
    expect(isWellFormed("\ud800")).toBe(false);
    expect(isWellFormed("a\udc00b")).toBe(false);
    expect(isWellFormed("\udc00\ud800")).toBe(false); // a reversed pair is two lone halves
    expect(isWellFormed("\ud83d\ude00")).toBe(true);
  });
});

describe("jsonInputIssues", () => {
  it(`accepts ${MAX_JSON_DEPTH} levels and names the top-level field beyond them`, () => {
    expect(jsonInputIssues(JSON.parse(nested(MAX_JSON_DEPTH)))).toEqual([]);
    expect(jsonInputIssues(JSON.parse(nested(MAX_JSON_DEPTH + 1)))).toEqual([
      { field: "a", problem: `is nested more than ${MAX_JSON_DEPTH} levels deep` },
    ]);
    // Arrays count as levels too; the field is the top-level index.
    const arrays = JSON.parse(`${"[".repeat(MAX_JSON_DEPTH + 1)}${"]".repeat(MAX_JSON_DEPTH + 1)}`);
    expect(jsonInputIssues(arrays)).toEqual([
      { field: "0", problem: `is nested more than ${MAX_JSON_DEPTH} levels deep` },
    ]);
  });

  it("walks 10,000 levels without recursion (no RangeError)", () => {
    const body = JSON.parse(`{"proxyAdditionalData":${nested(10_000)}}`);
    expect(jsonInputIssues(body)).toEqual([
      { field: "proxyAdditionalData", problem: `is nested more than ${MAX_JSON_DEPTH} levels deep` },
    ]);
  });

  it("names every string and key with a lone surrogate, by its path", () => {
    const body = JSON.parse('{"name":"\\ud800","list":["ok","\\udfff"],"map":{"\\ud800x":1},"ok":"😀"}');
    expect(jsonInputIssues(body)).toEqual([
      { field: "name", problem: expect.stringContaining("well-formed Unicode") },
      { field: "list.1", problem: expect.stringContaining("well-formed Unicode") },
      { field: "map", problem: expect.stringContaining("has a key that") },
    ]);
    expect(jsonInputIssues("\ud800")).toEqual([{ field: "body", problem: expect.any(String) }]);
  });

  it("refuses numbers JSON.parse turned into Infinity", () => {
    expect(jsonInputIssues(JSON.parse('{"n":1e400,"m":-1e400,"ok":1e308}'))).toEqual([
      { field: "n", problem: "is a number out of range" },
      { field: "m", problem: "is a number out of range" },
    ]);
  });

  it("stops after ten issues", () => {
    const body = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`k${i}`, "\ud800"]));
    expect(jsonInputIssues(body)).toHaveLength(10);
  });

  it("treats constructor, toString and the like as plain keys, and refuses __proto__ at any depth", () => {
    expect(jsonInputIssues(JSON.parse('{"constructor":{"toString":{"hasOwnProperty":1}}}'))).toEqual([]);
    expect(jsonInputIssues(JSON.parse('{"a":{"b":{"__proto__":{"x":1}}}}'))).toEqual([
      { field: "a.b", problem: 'has the key "__proto__", which is not accepted' },
    ]);
    expect(jsonInputIssues(JSON.parse('{"__proto__":1}'))).toEqual([
      { field: "body", problem: 'has the key "__proto__", which is not accepted' },
    ]);
  });
});

describe("parseJsonInput", () => {
  it("is the spec's 400 naming body for invalid JSON, and naming the field otherwise", () => {
    expect(errorOf(() => parseJsonInput("{")).body).toMatchObject({
      message: VALIDATION_MESSAGE,
      fields: ["body"],
    });
    const deep = errorOf(() => parseJsonInput(`{"body":${nested(300)}}`));
    expect(deep.status).toBe(400);
    expect(deep.body.fields).toEqual(["body"]);
    expect(errorOf(() => parseJsonInput('{"clientName":"\\ud800"}')).body.fields).toEqual(["clientName"]);
    expect(parseJsonInput('{"a":[1,{"b":null}]}')).toEqual({ a: [1, { b: null }] });
  });
});

describe("decodePathParameter", () => {
  it("decodes percent-encoded UTF-8", () => {
    expect(decodePathParameter("clientId", "a%20b%F0%9F%98%80")).toBe("a b😀");
    expect(decodePathParameter("proxyId", "%2e%2e")).toBe("..");
  });

  it.each([
    ["%ZZ", "%ZZ", "is not valid percent-encoded UTF-8"],
    ["%", "%", "is not valid percent-encoded UTF-8"],
    ["%E0%A4%A", "%E0%A4%A", "is not valid percent-encoded UTF-8"],
    ["an encoded lone surrogate", "%ED%A0%80", "is not valid percent-encoded UTF-8"],
    ["an overlong /", "%C0%AF", "is not valid percent-encoded UTF-8"],
    ["129 characters", "x".repeat(129), "is longer than 128 characters"],
    ["empty", "", "is a required path parameter"],
  ])("%s is a 400 naming the parameter", (_label, raw, problem) => {
    const error = errorOf(() => decodePathParameter("clientId", raw));
    expect(error.status).toBe(400);
    expect(error.body).toMatchObject({ fields: ["clientId"], errors: [`clientId: ${problem}`] });
  });
});

describe("queryIssues", () => {
  it("names query parameters whose name or value is ill-formed", () => {
    expect(queryIssues({ page: "1", constructor: "x" }, { page: ["1"], constructor: ["x"] })).toEqual([]);
    expect(queryIssues({ page: "\ud800" }, { page: ["1", "\ud800"] })).toEqual([
      { field: "query.page", problem: expect.stringContaining("well-formed Unicode") },
    ]);
    expect(queryIssues(null, { "\udc00": ["1"] })).toEqual([{ field: "query", problem: expect.any(String) }]);
    expect(queryIssues(null, null)).toEqual([]);
  });
});

describe("storedDocumentIssues and proxyAdditionalData", () => {
  it("refuses what DynamoDB cannot store or give back", () => {
    expect(
      storedDocumentIssues({ a: 1, b: [0.5, -0, 1.5e-130, Number.MAX_SAFE_INTEGER], c: { d: "" } }),
    ).toEqual([]);
    expect(
      storedDocumentIssues({ a: { "": 1 }, b: 2 ** 53, c: [1e-300], d: 1e300 }).map((issue) => issue.path),
    ).toEqual([["a"], ["b"], ["c", 0], ["d"]]);
  });

  it("is a 400 naming the path inside proxyAdditionalData", () => {
    const error = errorOf(() =>
      parseInput(AdditionalData, { x: { "": 1 }, n: 2 ** 53 }, "proxyAdditionalData"),
    );
    expect(error.body.fields).toEqual(["x", "n"]);
    expect(parseInput(AdditionalData, { constructor: { prototype: 1 }, list: [[]] })).toEqual({
      constructor: { prototype: 1 },
      list: [[]],
    });
  });
});

describe("the local API gateway's request parts", () => {
  it("keeps the raw path: no dot-segment normalisation, no decoding", () => {
    expect(splitTarget("/api/clients/c1/proxies/%2e%2e?x=1#frag")).toEqual({
      path: "/api/clients/c1/proxies/%2e%2e",
      query: "x=1",
    });
    expect(splitTarget("/api/clients/c1/proxies/..").path).toBe("/api/clients/c1/proxies/..");
    expect(splitTarget("/a?b?c")).toEqual({ path: "/a", query: "b?c" });
  });

  it("builds maps where any name is data", () => {
    const names = ["constructor", "__proto__", "toString", "hasOwnProperty"];
    const { single, multi } = valueMaps([
      ...names.map((n) => [n, "1"] as [string, string]),
      ["constructor", "2"],
    ]);
    for (const name of names) expect(Object.hasOwn(single, name), name).toBe(true);
    expect(single.constructor).toBe("2");
    expect(multi.constructor).toEqual(["1", "2"]);
    expect(Object.getOwnPropertyDescriptor(multi, "__proto__")?.value).toEqual(["1"]);
    expect(Object.getPrototypeOf(single)).toBe(Object.prototype);
  });
});
