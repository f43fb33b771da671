/** The access rule entity and its per-parent counter: stored items read as typed fields, or refused naming the field. */
import { describe, expect, it } from "vitest";
import { ruleCounterItemOf, ruleItemOf, ruleKeys } from "#lib/db/entities/rule.ts";

const stored = {
  pKey: "CLIENT#c",
  sKey: "RULE#p#r",
  entity: "rule",
  ruleId: "r",
  effect: "deny",
  priority: 10,
  methods: ["GET"],
  path: { pattern: "^/admin", presence: "present" },
  pathPattern: "^/admin",
  pathPresence: "present",
  headerChecks: [{ name: "x-key", pattern: null, presence: "absent" }],
  queryChecks: [],
  regexFlags: "i",
  notes: "",
  patternCost: 12,
  userId: "u",
  clientId: "c",
  parentId: "p",
  parentType: "proxy",
  createdAt: "2026-01-01T00:00:00.000Z",
  updatedAt: "2026-01-01T00:00:00.000Z",
};

const counter = {
  pKey: "CLIENT#c",
  sKey: "RULE#p##COUNTER",
  entity: "rule-counter",
  clientId: "c",
  parentId: "p",
  ruleCount: 3,
  patternCost: 40,
};

describe("the rule entity", () => {
  it("reads a stored rule as typed fields", () => {
    expect(ruleItemOf(stored)).toEqual(stored);
    // Rules stored before the pattern-cost cap have no patternCost.
    const { patternCost: _cost, ...older } = stored;
    expect(ruleItemOf(older).patternCost).toBeUndefined();
  });

  it("refuses an item that is not a rule, naming the field", () => {
    expect(() => ruleItemOf({ ...stored, priority: "10" })).toThrow(/priority/);
    expect(() => ruleItemOf({ ...stored, effect: "maybe" })).toThrow(/effect/);
    expect(() => ruleItemOf({ ...stored, headerChecks: [{ name: "x" }] })).toThrow(
      /headerChecks\.0\.presence/,
    );
    expect(() => ruleItemOf(counter)).toThrow(/entity/);
  });

  it("keys a rule beside its parent, and the counter among the parent's rules", () => {
    expect(ruleKeys.item("c", "p", "r")).toEqual({ pKey: "CLIENT#c", sKey: "RULE#p#r" });
    expect(ruleKeys.counter("c", "p")).toEqual({ pKey: "CLIENT#c", sKey: "RULE#p##COUNTER" });
  });
});

describe("the rule counter entity", () => {
  it("reads a stored counter as typed fields", () => {
    expect(ruleCounterItemOf(counter)).toEqual(counter);
  });

  it("reads a count or cost never written as 0", () => {
    const { ruleCount: _count, patternCost: _cost, ...bare } = counter;
    expect(ruleCounterItemOf(bare)).toEqual({ ...bare, ruleCount: 0, patternCost: 0 });
  });

  it("refuses an item that is not a counter, naming the field", () => {
    expect(() => ruleCounterItemOf({ ...counter, ruleCount: "3" })).toThrow(/ruleCount/);
    expect(() => ruleCounterItemOf(stored)).toThrow(/entity/);
  });
});
