/**
 * Filters and overrides as plain functions (lib/domain/filters; docs/filters.md): the payload
 * filter's field removal, path-prefix override selection, and the request bodies' 400s.
 */
import { describe, expect, it } from "vitest";
import { prefixCovers, removeFields, selectPathOverride } from "#lib/domain/filters/apply.ts";
import { MAX_IP_RANGES, MAX_PATH_OVERRIDES } from "#lib/domain/filters/constants.ts";
import { UpdateFiltersBody, UpdateOverridesBody } from "#lib/domain/filters/schema.ts";
import { parseInput } from "#lib/http/validation.ts";

const split = (...paths: string[]) => paths.map((path) => path.split("."));

describe("removeFields", () => {
  it("removes top-level and nested fields, leaving the rest", () => {
    const value = { id: 1, secret: "s", user: { name: "a", ssn: "x", address: { zip: "1" } } };
    expect(removeFields(value, split("secret", "user.ssn", "user.address.zip"))).toBe(3);
    expect(value).toEqual({ id: 1, user: { name: "a", address: {} } });
  });

  it("follows array indexes and `*` over arrays and objects", () => {
    const value = {
      items: [
        { id: 1, internal: true },
        { id: 2, internal: false },
      ],
      byId: { a: { token: "t1", keep: 1 }, b: { token: "t2" } },
    };
    expect(removeFields(value, split("items.*.internal", "byId.*.token"))).toBe(4);
    expect(value).toEqual({ items: [{ id: 1 }, { id: 2 }], byId: { a: { keep: 1 }, b: {} } });
    const indexed = { items: [{ x: 1 }, { x: 2 }] };
    expect(removeFields(indexed, split("items.1.x"))).toBe(1);
    expect(indexed).toEqual({ items: [{ x: 1 }, {}] });
  });

  it("works on a top-level array with `*`", () => {
    const value = [{ a: 1, b: 2 }, { a: 3 }];
    expect(removeFields(value, split("*.a"))).toBe(2);
    expect(value).toEqual([{ b: 2 }, {}]);
  });

  it("never removes array elements, follows only own properties and ignores paths that do not resolve", () => {
    const value = { list: [1, 2, 3], n: 5, s: "text", nested: { a: null } };
    expect(
      removeFields(
        value,
        split("list.0", "list.*", "n.x", "s.length", "missing.a", "nested.a.b", "toString", "list.01.x"),
      ),
    ).toBe(0);
    expect(value).toEqual({ list: [1, 2, 3], n: 5, s: "text", nested: { a: null } });
  });

  it("removes a JSON key named __proto__ as an ordinary field, without touching prototypes", () => {
    const value = JSON.parse('{"__proto__": {"polluted": true}, "keep": 1}') as Record<string, unknown>;
    expect(removeFields(value, split("__proto__"))).toBe(1);
    expect(Object.keys(value)).toEqual(["keep"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe("path overrides: the longest prefix covering the path, on segment boundaries", () => {
  it("covers a prefix on segment boundaries only", () => {
    expect(prefixCovers("/v1", "/v1")).toBe(true);
    expect(prefixCovers("/v1", "/v1/")).toBe(true);
    expect(prefixCovers("/v1", "/v1/items")).toBe(true);
    expect(prefixCovers("/v1", "/v10")).toBe(false);
    expect(prefixCovers("/v1/", "/v1/items")).toBe(true);
    expect(prefixCovers("/v1/", "/v1")).toBe(false);
    expect(prefixCovers("/", "/anything/at/all")).toBe(true);
    expect(prefixCovers("/V1", "/v1")).toBe(false);
  });

  it("chooses the longest covering prefix, whatever the order", () => {
    const overrides = [
      { pathPrefix: "/", timeoutSeconds: 10 },
      { pathPrefix: "/reports/slow", timeoutSeconds: 60 },
      { pathPrefix: "/reports", timeoutSeconds: 30 },
    ];
    expect(selectPathOverride(overrides, "/reports/slow/q1")?.timeoutSeconds).toBe(60);
    expect(selectPathOverride(overrides, "/reports/slowly")?.timeoutSeconds).toBe(30);
    expect(selectPathOverride(overrides, "/reports")?.timeoutSeconds).toBe(30);
    expect(selectPathOverride(overrides, "/users")?.timeoutSeconds).toBe(10);
    expect(selectPathOverride(overrides.slice(1), "/users")).toBeUndefined();
    expect(selectPathOverride([], "/x")).toBeUndefined();
  });
});

/** The fields a 400 names for a body. */
function refusedFields(schema: Parameters<typeof parseInput>[0], body: unknown): string[] {
  try {
    parseInput(schema, body);
  } catch (error) {
    return (error as { details: { fields: string[] } }).details.fields;
  }
  return [];
}

describe("filters body", () => {
  it("normalises header names to lowercase and drops duplicates", () => {
    expect(
      UpdateFiltersBody.parse({ requiredHeaders: ["X-Tenant", "x-tenant"], stripHeaders: ["X-Debug"] }),
    ).toEqual({ requiredHeaders: ["x-tenant"], stripHeaders: ["x-debug"] });
    expect(UpdateFiltersBody.parse({ ipAllow: null })).toEqual({ ipAllow: null });
  });

  it.each([
    [{ ipAllow: ["10.0.0.0/33"] }, "ipAllow.0"],
    [{ ipDeny: ["10.0.0.1", "nope"] }, "ipDeny.1"],
    [{ ipAllow: "10.0.0.0/8" }, "ipAllow"],
    [{ ipAllow: Array.from({ length: MAX_IP_RANGES + 1 }, (_, i) => `10.0.${i % 256}.0/24`) }, "ipAllow"],
    [{ requiredHeaders: ["bad header"] }, "requiredHeaders.0"],
    [{ stripHeaders: ["Host"] }, "stripHeaders.0"],
    [{ stripHeaders: ["content-length"] }, "stripHeaders.0"],
    [{ removeResponseFields: ["a..b"] }, "removeResponseFields.0"],
    [{ removeResponseFields: [""] }, "removeResponseFields.0"],
    [{ other: 1 }, "other"],
  ])("refuses a body naming $1", (body, field) => {
    expect(refusedFields(UpdateFiltersBody, body)).toEqual([field]);
  });
});

describe("overrides body", () => {
  it.each([
    [{ pathOverrides: [{ pathPrefix: "v1", timeoutSeconds: 5 }] }, "pathOverrides.0.pathPrefix"],
    [{ pathOverrides: [{ pathPrefix: "/a/../b", timeoutSeconds: 5 }] }, "pathOverrides.0.pathPrefix"],
    [{ pathOverrides: [{ pathPrefix: "/a?b", timeoutSeconds: 5 }] }, "pathOverrides.0.pathPrefix"],
    [{ pathOverrides: [{ pathPrefix: "/a", timeoutSeconds: 61 }] }, "pathOverrides.0.timeoutSeconds"],
    [{ pathOverrides: [{ pathPrefix: "/a", timeoutSeconds: 0 }] }, "pathOverrides.0.timeoutSeconds"],
    [{ pathOverrides: [{ pathPrefix: "/a", timeoutSeconds: 1.5 }] }, "pathOverrides.0.timeoutSeconds"],
    [{ pathOverrides: [{ pathPrefix: "/a" }] }, "pathOverrides.0"],
    [
      { pathOverrides: [{ pathPrefix: "/a", additionalHeaders: { Host: "x" } }] },
      "pathOverrides.0.additionalHeaders.Host",
    ],
    [
      {
        pathOverrides: [
          { pathPrefix: "/a", timeoutSeconds: 5 },
          { pathPrefix: "/a", timeoutSeconds: 6 },
        ],
      },
      "pathOverrides.1.pathPrefix",
    ],
    [
      {
        pathOverrides: Array.from({ length: MAX_PATH_OVERRIDES + 1 }, (_, i) => ({
          pathPrefix: `/p${i}`,
          timeoutSeconds: 5,
        })),
      },
      "pathOverrides",
    ],
    [{ pathOverrides: [{ pathPrefix: "/a", timeoutSeconds: 5, extra: 1 }] }, "pathOverrides.0.extra"],
  ])("refuses a body naming $1", (body, field) => {
    expect(refusedFields(UpdateOverridesBody, body)).toEqual([field]);
  });

  it("accepts a timeout, headers, or both", () => {
    expect(
      UpdateOverridesBody.parse({
        pathOverrides: [
          { pathPrefix: "/", timeoutSeconds: 60 },
          { pathPrefix: "/v2/", additionalHeaders: { "X-Version": "2" } },
        ],
      }).pathOverrides,
    ).toHaveLength(2);
  });
});
