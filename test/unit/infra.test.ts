/** The table definition and the route manifest that the CDK stack and the local runner both build from. */
import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { operationKey } from "#lib/api/dispatch.ts";
import { CORE_API_ROUTES } from "#lib/api/routes.ts";
import {
  AUTHORIZER_FUNCTION,
  FUNCTION_GROUPS,
  type FunctionGroup,
  MCP_FUNCTION,
  SCHEDULED_FUNCTIONS,
  unionOfGroups,
} from "#lib/infra/api-manifest.ts";
import {
  createTableInput,
  GLOBAL_SECONDARY_INDEXES,
  PARTITION_KEY,
  SORT_KEY,
  STREAM_VIEW_TYPE,
} from "#lib/infra/table-definition.ts";

const routeKey = (route: { method: string; path: string }) => operationKey(route.method, route.path);

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

describe("createTableInput", () => {
  const input = createTableInput("gateway-table");

  it("names the table, bills on demand, and keys on pKey (hash) and sKey (range)", () => {
    expect(input.TableName).toBe("gateway-table");
    expect(input.BillingMode).toBe("PAY_PER_REQUEST");
    expect(input.KeySchema).toEqual([
      { AttributeName: "pKey", KeyType: "HASH" },
      { AttributeName: "sKey", KeyType: "RANGE" },
    ]);
    expect([PARTITION_KEY, SORT_KEY]).toEqual(["pKey", "sKey"]);
  });

  it("creates GSI1 and GSI2 with their keys and full projection", () => {
    expect(GLOBAL_SECONDARY_INDEXES.map((i) => i.indexName)).toEqual(["GSI1", "GSI2"]);
    expect(input.GlobalSecondaryIndexes).toEqual([
      {
        IndexName: "GSI1",
        KeySchema: [
          { AttributeName: "gsi1pk", KeyType: "HASH" },
          { AttributeName: "gsi1sk", KeyType: "RANGE" },
        ],
        Projection: { ProjectionType: "ALL" },
      },
      {
        IndexName: "GSI2",
        KeySchema: [
          { AttributeName: "gsi2pk", KeyType: "HASH" },
          { AttributeName: "gsi2sk", KeyType: "RANGE" },
        ],
        Projection: { ProjectionType: "ALL" },
      },
    ]);
  });

  it("defines exactly the key attributes of the table and every index, once each, as strings", () => {
    const names = input.AttributeDefinitions.map((a) => a.AttributeName);
    expect(new Set(names).size).toBe(names.length);
    expect([...names].sort()).toEqual(["gsi1pk", "gsi1sk", "gsi2pk", "gsi2sk", "pKey", "sKey"]);
    expect(input.AttributeDefinitions.every((a) => a.AttributeType === "S")).toBe(true);
    for (const index of GLOBAL_SECONDARY_INDEXES) {
      expect(names).toContain(index.partitionKey);
      expect(names).toContain(index.sortKey);
      expect(index.purpose.length).toBeGreaterThan(0);
    }
  });

  it("enables the stream with old and new images", () => {
    expect(STREAM_VIEW_TYPE).toBe("NEW_AND_OLD_IMAGES");
    expect(input.StreamSpecification).toEqual({ StreamEnabled: true, StreamViewType: "NEW_AND_OLD_IMAGES" });
  });
});

describe("CORE_API_ROUTES", () => {
  it("maps every route to a function group that exists", () => {
    const groups = Object.keys(FUNCTION_GROUPS);
    for (const route of CORE_API_ROUTES) expect(groups, routeKey(route)).toContain(route.group);
  });

  it("has no duplicate method and path", () => {
    const seen = new Map<string, number>();
    for (const route of CORE_API_ROUTES) seen.set(routeKey(route), (seen.get(routeKey(route)) ?? 0) + 1);
    expect([...seen].filter(([, count]) => count > 1)).toEqual([]);
  });

  it("puts every authenticated path under /api/ (public ones under /webhooks/ or /auth/, or the docs), well-formed", () => {
    for (const route of CORE_API_ROUTES) {
      expect(route.path, routeKey(route)).toMatch(
        route.public ? /^(\/webhooks\/|\/auth\/|\/docs$|\/openapi\.json$)/ : /^\/api\//,
      );
      expect(route.path, routeKey(route)).not.toMatch(/\/$|\/\//);
      for (const segment of route.path.split("/").slice(1)) {
        expect(segment, routeKey(route)).toMatch(/^([a-z][a-z0-9-]*(\.json)?|\{[a-zA-Z]+\})$/);
      }
      const params = route.path.match(/\{[^}]+\}/g) ?? [];
      expect(new Set(params).size, routeKey(route)).toBe(params.length);
    }
  });

  it("gives every function group at least one route and a functions/<name>.ts entry point", () => {
    for (const [key, group] of Object.entries(FUNCTION_GROUPS)) {
      expect(group.name).toBe(key);
      expect(group.name).toMatch(/^[a-z]+(-[a-z]+)*$/);
      expect(
        CORE_API_ROUTES.some((r) => r.group === key),
        key,
      ).toBe(true);
      expect(existsSync(resolve(root, "functions", `${group.name}.ts`)), group.name).toBe(true);
    }
    for (const fn of [AUTHORIZER_FUNCTION, ...Object.values(SCHEDULED_FUNCTIONS)]) {
      expect(existsSync(resolve(root, "functions", `${fn.name}.ts`)), fn.name).toBe(true);
    }
  });

  it("uses one path spelling per resource (the same parameter names at the same position)", () => {
    const paramAt = new Map<string, string>();
    for (const route of CORE_API_ROUTES) {
      const segments = route.path.split("/");
      segments.forEach((segment, i) => {
        if (!segment.startsWith("{")) return;
        const prefix = segments.slice(0, i).join("/");
        const known = paramAt.get(prefix);
        if (known) expect(segment, routeKey(route)).toBe(known);
        else paramAt.set(prefix, segment);
      });
    }
  });

  it("formats route keys as METHOD and path", () => {
    expect(routeKey({ method: "GET", path: "/api/users" })).toBe("GET /api/users");
  });
});

describe("unionOfGroups (the MCP endpoint's grants)", () => {
  const group = (tables: FunctionGroup["tables"], extra: Partial<FunctionGroup> = {}): FunctionGroup => ({
    name: tables,
    tables,
    ...extra,
  });

  it.each([
    [["none"], "none"],
    [["none", "home-read"], "home-read"],
    [["home-read", "home-write"], "home-write"],
    [["home-read", "all-regions-read"], "all-regions-read"],
    [["home-write", "all-regions-read"], "all-regions-read-home-write"],
    [["all-regions-read-home-write", "home-read"], "all-regions-read-home-write"],
    [["all-regions-read-home-write", "all-regions-write"], "all-regions-write"],
    [["none", "all-regions-write", "home-read"], "all-regions-write"],
  ] as [FunctionGroup["tables"][], FunctionGroup["tables"]][])(
    "%j -> %s (the widest access to the home table and to the others)",
    (tables, expected) => {
      expect(
        unionOfGroups(
          "x",
          tables.map((t) => group(t)),
        ).tables,
      ).toBe(expected);
    },
  );

  it("adds e-mail, payments, KMS and call-outs when any group has them, never package files", () => {
    expect(unionOfGroups("x", [group("home-read"), group("none")])).toEqual({
      name: "x",
      tables: "home-read",
      sendsEmail: false,
      usesPayments: false,
      usesKms: false,
      callsOut: false,
    });
    const union = unionOfGroups("x", [
      group("home-write", { sendsEmail: true }),
      group("none", { usesKms: true, packageFiles: ["redoc/bundles/redoc.standalone.js"] }),
      group("home-read", { usesPayments: true, callsOut: true }),
    ]);
    expect(union).toEqual({
      name: "x",
      tables: "home-write",
      sendsEmail: true,
      usesPayments: true,
      usesKms: true,
      callsOut: true,
    });
  });

  it("gives MCP_FUNCTION what every route group has, from FUNCTION_GROUPS", () => {
    const groups = Object.values(FUNCTION_GROUPS) as FunctionGroup[];
    expect(MCP_FUNCTION).toEqual(unionOfGroups("mcp", groups));
    expect(MCP_FUNCTION.tables).toBe("all-regions-write");
    for (const flag of ["sendsEmail", "usesPayments", "usesKms", "callsOut"] as const) {
      expect(MCP_FUNCTION[flag]).toBe(groups.some((g) => g[flag] === true));
    }
  });
});
