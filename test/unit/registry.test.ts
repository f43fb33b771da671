/**
 * The operation registry's own rules (issue 8): every operation has a handler and every handler an
 * operation (functions/<group>.ts exports exactly its group's operations), ids fit the MCP tool
 * names derived from them, path parameters are declared, access fits the path, and every operation
 * is described for a person; a reader (client or MSP) only reads.
 */
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, expectTypeOf, it } from "vitest";
import { z } from "zod";
import { operationKey, runOperation } from "#lib/api/dispatch.ts";
import { access, MessageResponse, type Operation, operation, pathParams } from "#lib/api/operation.ts";
import { ROLES_DOC, renderPermissionMatrix } from "#lib/api/permission-matrix.ts";
import { OPERATIONS } from "#lib/api/registry.ts";
import { CORE_API_ROUTES } from "#lib/api/routes.ts";
import type { ClientAccess, MspAccess } from "#lib/domain/access.ts";
import { MEMBER_MANAGER_ROLE, planMemberRemoval } from "#lib/domain/member-rules.ts";
import { FUNCTION_GROUPS } from "#lib/infra/api-manifest.ts";
import { errorOf } from "../support/errors.ts";

const functionFile = (group: string) =>
  fileURLToPath(new URL(`../../functions/${group}.ts`, import.meta.url));

const registryGroups = [...new Set(OPERATIONS.map((op) => op.group))].sort();
const routeGroups = [...new Set(CORE_API_ROUTES.map((route) => route.group))].sort();

/** `createProxy` -> `create_proxy` (the MCP tool name). */
const snakeCase = (id: string) => id.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
const camelCase = (name: string) =>
  name.replace(/_([a-z])/g, (_match, letter: string) => letter.toUpperCase());
const pathParamNames = (path: string) => [...path.matchAll(/\{(\w+)\}/g)].map((match) => match[1] as string);

describe("handlers and operations", () => {
  it.each(registryGroups)(
    "functions/%s.ts exports exactly the registry's operations of its group",
    async (group) => {
      const module = (await import(`../../functions/${group}.ts`)) as Record<string, unknown>;
      const mine = OPERATIONS.filter((op) => op.group === group);
      expect(typeof module.handler, `functions/${group}.ts must export handler`).toBe("function");
      const exported = module.operations as readonly Operation[] | undefined;
      expect(Array.isArray(exported), `functions/${group}.ts must export operations`).toBe(true);
      // The same declarations, by identity: the handler dispatches what the registry lists.
      const ids = (ops: readonly Operation[]) => ops.map((op) => op.id).sort();
      expect(ids(exported!)).toEqual(ids(mine));
      for (const op of exported!) expect(mine).toContain(op);
    },
  );

  it("no handler dispatches an operation the registry does not list", async () => {
    const unlisted: string[] = [];
    for (const group of Object.keys(FUNCTION_GROUPS)) {
      const module = (await import(`../../functions/${group}.ts`)) as Record<string, unknown>;
      const exported = (module.operations ?? []) as readonly Operation[];
      for (const op of exported) if (!OPERATIONS.includes(op)) unlisted.push(`${group}: ${op.id}`);
    }
    expect(unlisted, "add the group's operations to lib/api/registry.ts").toEqual([]);
  });

  it("every operation's group has a function file", () => {
    expect(registryGroups.filter((group) => !existsSync(functionFile(group)))).toEqual([]);
  });

  it("every route comes from an operation: no route is declared anywhere else", () => {
    expect(CORE_API_ROUTES.map((route) => operationKey(route.method, route.path))).toEqual(
      OPERATIONS.map((op) => operationKey(op.method, op.path)),
    );
  });

  it("every route's group has a function file exporting a handler", async () => {
    for (const group of routeGroups) {
      const module = (await import(`../../functions/${group}.ts`)) as Record<string, unknown>;
      expect(typeof module.handler, `functions/${group}.ts`).toBe("function");
    }
  });
});

describe("operation declarations", () => {
  it("ids are unique, camelCase, and their snake_case forms (MCP tool names) are unique and valid", () => {
    const ids = OPERATIONS.map((op) => op.id);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
    for (const id of ids) {
      expect(id, id).toMatch(/^[a-z][a-zA-Z0-9]*$/);
      const snake = snakeCase(id);
      expect(snake, id).toMatch(/^[a-z][a-z0-9_]*$/);
      expect(snake.length, id).toBeLessThanOrEqual(64);
      expect(camelCase(snake), `${id} -> ${snake} does not convert back`).toBe(id);
    }
    const snakes = ids.map(snakeCase);
    expect(snakes.filter((name, i) => snakes.indexOf(name) !== i)).toEqual([]);
  });

  it("method and path are unique", () => {
    const keys = OPERATIONS.map((op) => operationKey(op.method, op.path));
    expect(keys.filter((key, i) => keys.indexOf(key) !== i)).toEqual([]);
  });

  it.each(OPERATIONS.map((op) => [op.id, op] as const))(
    "%s declares exactly its path parameters",
    (_id, op) => {
      expect(op.params, "params must be a zod object").toBeInstanceOf(z.ZodObject);
      const declaredParams = Object.keys((op.params as z.ZodObject).shape).sort();
      expect(declaredParams).toEqual(pathParamNames(op.path).sort());
    },
  );

  it("client access needs {clientId} in the path, MSP access {mspId}, self access {userId}", () => {
    const wrong = OPERATIONS.filter(
      (op) =>
        (op.access.kind === "client" && !pathParamNames(op.path).includes("clientId")) ||
        (op.access.kind === "msp" && !pathParamNames(op.path).includes("mspId")) ||
        (op.access.kind === "self" && !pathParamNames(op.path).includes("userId")),
    ).map((op) => `${op.id} (${op.access.kind}): ${op.path}`);
    expect(wrong).toEqual([]);
  });

  it("types a handler's input by its access: the member for client access, the msp for MSP access, neither otherwise", async () => {
    // Type level (`npx tsc --noEmit` checks these): without the narrowing, `member` would be
    // `ClientAccess | undefined` and the first assertion would not compile.
    const base = {
      method: "GET",
      group: "users",
      summary: "Typed input",
      description: "Typed input.",
      effect: "read",
      response: { status: 200, schema: MessageResponse },
    } as const;
    operation({
      ...base,
      id: "typedClient",
      path: "/api/clients/{clientId}/typed",
      params: pathParams("clientId"),
      access: access.client("reader"),
      handler: async (input) => {
        expectTypeOf(input.member).toEqualTypeOf<ClientAccess>();
        expectTypeOf(input.msp).toEqualTypeOf<undefined>();
        return { body: { message: "ok" } };
      },
    });
    operation({
      ...base,
      id: "typedMsp",
      path: "/api/msps/{mspId}/typed",
      params: pathParams("mspId"),
      access: access.msp("msp_reader"),
      handler: async (input) => {
        expectTypeOf(input.msp).toEqualTypeOf<MspAccess>();
        expectTypeOf(input.member).toEqualTypeOf<undefined>();
        return { body: { message: "ok" } };
      },
    });
    // Run time: an operation whose access grants nothing gets neither (no table is read for it).
    const seen: unknown[] = [];
    const typedUser = operation({
      ...base,
      id: "typedUser",
      path: "/api/typed",
      access: access.user,
      handler: async (input) => {
        expectTypeOf(input.member).toEqualTypeOf<undefined>();
        seen.push(input.member, input.msp);
        return { body: { message: "ok" } };
      },
    });
    const principal = { userId: "user-1", tokenId: "token-1", systemAdmin: false };
    const answer = await runOperation(
      typedUser,
      principal,
      { params: {}, read: () => ({ query: {}, body: undefined }) },
      { requestId: "r", baseUrl: "https://api.example" },
    );
    expect(answer.body).toEqual({ message: "ok" });
    expect(seen).toEqual([undefined, undefined]);
  });

  it("every operation has a summary and a description", () => {
    const undescribed = OPERATIONS.filter(
      (op) => op.summary.trim().length === 0 || op.description.trim().length === 0,
    ).map((op) => op.id);
    expect(undescribed).toEqual([]);
  });

  it("every operation declares a success status and a response schema", () => {
    for (const op of OPERATIONS) {
      // A route that exists only to answer 405 declares that 405 (unsupportedOperation).
      if (op.unsupported) {
        expect(op.response.status, op.id).toBe(405);
        continue;
      }
      expect(op.response.status, op.id).toBeGreaterThanOrEqual(200);
      expect(op.response.status, op.id).toBeLessThan(300);
      expect(op.response.schema, op.id).toBeInstanceOf(z.ZodType);
    }
  });
});

describe("the permission matrix (docs/roles.md)", () => {
  it("docs/roles.md is the matrix rendered from the registry (run `npm run docs:roles` after a change)", () => {
    const doc = readFileSync(fileURLToPath(new URL(`../../${ROLES_DOC}`, import.meta.url)), "utf8");
    expect(doc).toBe(renderPermissionMatrix());
  });

  it("grants a client operation to its least role and every role above it, and names other accesses", () => {
    const base = OPERATIONS[0]!;
    const rendered = renderPermissionMatrix(
      [
        { ...base, id: "manageThing", summary: "Manage a thing", access: access.client("devops") },
        { ...base, id: "ownThing", summary: "Own a thing", method: "PUT", access: access.self },
      ],
      [],
    );
    expect(rendered).toContain(
      `| \`manageThing\` Manage a thing | \`${base.method} ${base.path}\` | ✓ | ✓ | ✓ | — | — |`,
    );
    expect(rendered).toContain(
      `| \`ownThing\` Own a thing | \`PUT ${base.path}\` | self | self | self | self | self |`,
    );
    expect(rendered).not.toContain("Not yet in the registry");
  });
});

/**
 * A reader only reads (issue 8): an operation open to the lowest role of a client (`reader`) or of
 * an MSP (`msp_reader`) must be a `read`, unless it is listed here with the domain rule that
 * narrows it. Declaring a write or a delete for readers fails this test.
 */
const READER_NON_READS: Readonly<Record<string, string>> = {
  // Any member may leave an organisation (DELETE of their own membership); removing anyone else
  // needs MEMBER_MANAGER_ROLE (admin), checked in lib/domain/member-rules.ts planMemberRemoval.
  removeMember: "a member leaving; removing others needs admin (planMemberRemoval)",
};
const MSP_READER_NON_READS: Readonly<Record<string, string>> = {};

const openTo = (kind: "client" | "msp", role: string) =>
  OPERATIONS.filter((op) => op.access.kind === kind && "role" in op.access && op.access.role === role);

describe("a reader only reads", () => {
  it.each([
    ["client", "reader", READER_NON_READS],
    ["msp", "msp_reader", MSP_READER_NON_READS],
  ] as const)("every %s operation open to %s is a read, but the listed exceptions", (kind, role, allowed) => {
    const ops = openTo(kind, role);
    if (kind === "client") expect(ops.length).toBeGreaterThan(0);
    const nonReads = ops.filter((op) => op.effect !== "read").map((op) => `${op.id} (${op.effect})`);
    expect(
      nonReads.filter((entry) => !Object.hasOwn(allowed, entry.split(" ")[0] as string)),
      `a ${role} must only read: give these a higher role, or list them with the rule that narrows them`,
    ).toEqual([]);
    // No stale exception: each listed one is still open to the role and not a read.
    for (const id of Object.keys(allowed)) {
      const op = ops.find((candidate) => candidate.id === id);
      expect(op, `${id} is listed as an exception for ${role} but is not open to it`).toBeDefined();
      expect(op?.effect).not.toBe("read");
    }
  });

  it("removeMember's exception holds: a reader may remove only themselves", () => {
    const counts = { adminCount: 1, ownerCount: 1 };
    expect(() =>
      planMemberRemoval({
        actorUserId: "reader-1",
        actorRoles: ["reader"],
        targetUserId: "reader-1",
        targetRoles: ["reader"],
        counts,
      }),
    ).not.toThrow();
    const error = errorOf(() =>
      planMemberRemoval({
        actorUserId: "reader-1",
        actorRoles: ["reader"],
        targetUserId: "user-2",
        targetRoles: ["user"],
        counts,
      }),
    );
    expect(error.status).toBe(403);
    expect(MEMBER_MANAGER_ROLE).toBe("admin");
  });
});
