/**
 * The view of the caller's request (lib/domain/request-view.ts): how a check tests a field with
 * several values (repeated values, comma-joined header lines, JSON arrays), the path normalisation
 * of RFC 3986 6.2.2, and the maps without the caller's credential.
 */
import { describe, expect, it } from "vitest";
import {
  checkOutcome,
  type FieldValue,
  fieldValues,
  headerValue,
  MAX_MATCHED_VALUE_LENGTH,
  MAX_MATCHED_VALUES,
  matchValues,
  normalisePath,
  omitNames,
} from "#lib/domain/request-view.ts";

const exact = (wanted: string) => (text: string) => text === wanted;

/** The outcome of a check `presence` + pattern `^wanted$` on these values. */
const outcome = (values: FieldValue[], wanted: string, presence: "present" | "absent", broad: boolean) =>
  checkOutcome(fieldValues(values), presence, (entry) => matchValues(entry.values, exact(wanted)), broad);

describe("headerValue", () => {
  it("keeps a value without commas as it is, and lists the trimmed elements of one with commas", () => {
    expect(headerValue("user")).toEqual(["user"]);
    expect(headerValue("user, admin")).toEqual(["user, admin", "user", "admin"]);
    expect(headerValue("user,admin,")).toEqual(["user,admin,", "user", "admin", ""]);
  });
});

describe("matchValues", () => {
  it("any: some value or element matches; every: each value matches whole or in every element", () => {
    expect(matchValues([["user"], ["admin"]], exact("admin"))).toEqual({ any: true, every: false });
    expect(matchValues([["admin"], ["admin"]], exact("admin"))).toEqual({ any: true, every: true });
    expect(matchValues([headerValue("user,admin")], exact("admin"))).toEqual({ any: true, every: false });
    expect(matchValues([headerValue("admin, admin")], exact("admin"))).toEqual({ any: true, every: true });
    expect(matchValues([headerValue("a, b")], exact("a, b"))).toEqual({ any: true, every: true });
    expect(matchValues([["x"]], exact("admin"))).toEqual({ any: false, every: false });
  });
});

describe("checkOutcome", () => {
  const orders: FieldValue[][] = [
    [["user"], ["admin"]],
    [["admin"], ["user"]],
    [headerValue("user,admin")],
    [headerValue("admin, user")],
    [['["user","admin"]', "user", "admin"]],
    [['["admin","user"]', "admin", "user"]],
  ];

  it("a deny (broad) present check holds when any value matches, bad value first or last", () => {
    for (const values of orders) expect(outcome(values, "admin", "present", true), String(values)).toBe(true);
  });

  it("an allow (narrow) present check holds only when every value matches", () => {
    for (const values of orders)
      expect(outcome(values, "user", "present", false), String(values)).toBe(false);
    expect(outcome([["user"], ["user"]], "user", "present", false)).toBe(true);
    expect(outcome([headerValue("user, user")], "user", "present", false)).toBe(true);
  });

  it("absent is the negation with the quantifier swapped: a deny holds unless every value matches", () => {
    for (const values of orders) {
      expect(outcome(values, "user", "absent", true), String(values)).toBe(true);
      expect(outcome(values, "admin", "absent", false), String(values)).toBe(false);
    }
    expect(outcome([["user"]], "user", "absent", true)).toBe(false);
    expect(outcome([["user"]], "admin", "absent", false)).toBe(true);
  });

  it("a single value decides the same way for both sides", () => {
    for (const broad of [true, false]) {
      expect(outcome([["admin"]], "admin", "present", broad)).toBe(true);
      expect(outcome([["user"]], "admin", "present", broad)).toBe(false);
    }
  });

  it("presence without a pattern counts any value; a missing field holds only for absent", () => {
    expect(checkOutcome(fieldValues([[""]]), "present", null, false)).toBe(true);
    expect(checkOutcome(undefined, "present", null, true)).toBe(false);
    expect(checkOutcome(undefined, "absent", null, true)).toBe(true);
    const never = () => {
      throw new Error("not matched");
    };
    expect(checkOutcome(undefined, "present", never, true)).toBe(false);
    expect(checkOutcome(undefined, "absent", never, false)).toBe(true);
  });

  it("over the bounds or the budget: undecided", () => {
    const many = Array.from({ length: MAX_MATCHED_VALUES + 1 }, (): [string] => ["a"]);
    expect(outcome(many, "a", "present", true)).toBeUndefined();
    expect(outcome([["a".repeat(MAX_MATCHED_VALUE_LENGTH + 1)]], "a", "present", true)).toBeUndefined();
    expect(checkOutcome(fieldValues([["a"]]), "present", () => undefined, true)).toBeUndefined();
    expect(checkOutcome("undecided", "absent", null, true)).toBeUndefined();
  });
});

describe("normalisePath", () => {
  it("decodes escapes of unreserved characters only", () => {
    expect(normalisePath("/%61dmin")).toBe("/admin");
    expect(normalisePath("/%41DMIN/%7e%2D%2e%5F%30")).toBe("/ADMIN/~-._0");
    expect(normalisePath("/%2e%2e/x")).toBe("/../x");
  });

  it("upper-cases the hex digits of the other escapes and never decodes twice", () => {
    expect(normalisePath("/a%2fb%3a%c3%a9")).toBe("/a%2Fb%3A%C3%A9");
    expect(normalisePath("/%2561dmin")).toBe("/%2561dmin");
    expect(normalisePath("/%252e%252e/")).toBe("/%252e%252e/");
    expect(normalisePath("/%zz/%4/%")).toBe("/%zz/%4/%");
    expect(normalisePath("/plain/path")).toBe("/plain/path");
  });

  it("is idempotent", () => {
    for (const path of ["/%61%2f%252e", "/x%7E%7e", "/%C3%a9"])
      expect(normalisePath(normalisePath(path))).toBe(normalisePath(path));
  });
});

describe("omitNames", () => {
  it("copies a map without the names given, with no prototype", () => {
    const kept = omitNames(
      { authorization: "Bearer s", "x-api-key": "k", accept: "a" },
      new Set(["authorization", "x-api-key"]),
    );
    expect({ ...kept }).toEqual({ accept: "a" });
    expect(Object.getPrototypeOf(kept)).toBeNull();
    const query = omitNames({ key: ["a", "b"], Key: "c" }, new Set(["key"]));
    expect({ ...query }).toEqual({ Key: "c" });
  });
});
