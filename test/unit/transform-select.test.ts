/** Which transform runs (lib/domain/transforms/select.ts): order, selection, status and modes. */
import { describe, expect, it } from "vitest";
import {
  allHold,
  selectionOrder,
  selectTransform,
  statusHolds,
  transformApplies,
} from "#lib/domain/transforms/select.ts";

const t = (transformId: string, priority: number, createdAt: string, transformActive = true) => ({
  transformId,
  priority,
  createdAt,
  transformActive,
});

describe("selectionOrder", () => {
  it("orders by priority (high first), then the oldest, then the id", () => {
    const ordered = selectionOrder([
      t("a", 1, "2025-01-01T00:00:00.000Z"),
      t("b", 5, "2025-01-03T00:00:00.000Z"),
      t("c", 5, "2025-01-02T00:00:00.000Z"),
      t("e", 0, "2025-01-01T00:00:00.000Z"),
      t("d", 5, "2025-01-02T00:00:00.000Z"),
    ]);
    expect(ordered.map((x) => x.transformId)).toEqual(["c", "d", "b", "a", "e"]);
  });
});

describe("selectTransform", () => {
  const ordered = selectionOrder([
    t("low", 1, "2025-01-01T00:00:00.000Z"),
    t("high", 9, "2025-01-02T00:00:00.000Z"),
    t("high-newer", 9, "2025-01-03T00:00:00.000Z"),
    t("off", 100, "2025-01-01T00:00:00.000Z", false),
  ]);

  it("picks the highest-priority transform that applies; of equal priority the oldest", () => {
    expect(selectTransform(ordered, () => true)?.transformId).toBe("high");
  });

  it("never picks an inactive transform, and skips those that do not apply", () => {
    const asked: string[] = [];
    const chosen = selectTransform(ordered, (x) => {
      asked.push(x.transformId);
      return x.transformId === "low";
    });
    expect(chosen?.transformId).toBe("low");
    expect(asked).toEqual(["high", "high-newer", "low"]); // inactive never evaluated, stops at the match
  });

  it("answers undefined when none applies", () => {
    expect(selectTransform(ordered, () => false)).toBeUndefined();
    expect(selectTransform([], () => true)).toBeUndefined();
  });
});

describe("statusHolds", () => {
  it("applies every operator, all items together", () => {
    expect(statusHolds([], 500)).toBe(true);
    expect(statusHolds([{ operator: "eq", value: 200 }], 200)).toBe(true);
    expect(statusHolds([{ operator: "eq", value: 200 }], 201)).toBe(false);
    expect(statusHolds([{ operator: "ne", value: 200 }], 201)).toBe(true);
    expect(statusHolds([{ operator: "gt", value: 399 }], 400)).toBe(true);
    expect(statusHolds([{ operator: "gt", value: 400 }], 400)).toBe(false);
    expect(statusHolds([{ operator: "gte", value: 400 }], 400)).toBe(true);
    expect(statusHolds([{ operator: "lt", value: 300 }], 299)).toBe(true);
    expect(statusHolds([{ operator: "lte", value: 299 }], 300)).toBe(false);
    const range = [
      { operator: "gte" as const, value: 400 },
      { operator: "lt" as const, value: 500 },
    ];
    expect(statusHolds(range, 404)).toBe(true);
    expect(statusHolds(range, 500)).toBe(false);
  });
});

describe("allHold and transformApplies", () => {
  it("combines outcomes: a false wins, then undecided", () => {
    expect(allHold([true, true])).toBe(true);
    expect(allHold([true, undefined])).toBeUndefined();
    expect(allHold([undefined, false])).toBe(false);
    expect(allHold([])).toBe(true);
  });

  it("all applies without evaluating; include and exclude; an undecided outcome applies", () => {
    let evaluated = 0;
    const outcome = (value: boolean | undefined) => () => {
      evaluated++;
      return value;
    };
    expect(transformApplies("all", null, outcome(false))).toBe(true);
    expect(evaluated).toBe(0);
    expect(transformApplies("conditional", "include", outcome(true))).toBe(true);
    expect(transformApplies("conditional", "include", outcome(false))).toBe(false);
    expect(transformApplies("conditional", null, outcome(false))).toBe(false);
    expect(transformApplies("conditional", "exclude", outcome(true))).toBe(false);
    expect(transformApplies("conditional", "exclude", outcome(false))).toBe(true);
    expect(transformApplies("conditional", "include", outcome(undefined))).toBe(true);
    expect(transformApplies("conditional", "exclude", outcome(undefined))).toBe(true);
  });
});
