/**
 * The caps on access rules per parent (docs/access-rules.md, "Limits") over real HTTP against the
 * local stack: the per-parent pattern cost is exact when rules are created in parallel, a delete
 * gives the room back, and the per-rule caps answer 400 naming the field.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { keys } from "#lib/db/keys.ts";
import { compileRulePattern, MAX_PATTERN_INSTRUCTIONS, patternCost } from "#lib/domain/rules/regex.ts";
import { MAX_HEADER_CHECKS, MAX_RULE_PATTERN_COST } from "#lib/domain/rules/rule-schema.ts";
import {
  createClientFor,
  startTestStack,
  storedItem,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const US = "us-east-1";
let stack: TestStack;
let owner: TestUser;
let clientId: string;

beforeAll(async () => {
  stack = await startTestStack();
});
beforeEach(async () => {
  owner = await stack.newUser();
  clientId = await createClientFor(owner, "Limits Co");
});
afterAll(async () => {
  await stack?.stop();
});

async function targetId(): Promise<string> {
  const response = await owner.api.post(`/api/clients/${clientId}/targets`, {
    targetName: "Limits",
    targetRegion: US,
    targetBaseURL: "https://api.example.test/v1",
    targetTestPath: "/health",
  });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return String(response.body.targets[0].targetId);
}

describe("rule caps per parent", () => {
  it("the pattern cost cap holds exactly under parallel creates, and a delete frees its cost", async () => {
    const parent = await targetId();
    const rules = `/api/clients/${clientId}/targets/${parent}/rules`;
    const pattern = "^x[0-9]{185}$";
    const cost = patternCost(compileRulePattern(pattern, ""));
    const fits = Math.floor(MAX_RULE_PATTERN_COST / cost);
    const attempts = fits + 4;
    const answers = await Promise.all(
      Array.from({ length: attempts }, (_, i) =>
        owner.api.post(rules, { effect: "deny", priority: i, pathPattern: pattern }),
      ),
    );
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 201)).toHaveLength(fits);
    expect(
      statuses.filter((status) => status !== 201).every((status) => status === 400 || status === 409),
    ).toBe(true);
    const listed = await owner.api.get(rules);
    expect(listed.body.rules).toHaveLength(fits);
    const counter = await storedItem(keys.rule(clientId, parent, "#COUNTER"), US);
    expect(counter).toMatchObject({ ruleCount: fits, patternCost: fits * cost });

    const refused = await owner.api.post(rules, { effect: "deny", priority: 1, pathPattern: pattern });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain(String(MAX_RULE_PATTERN_COST));
    // The counter is not a rule: it cannot be deleted through the API.
    expect((await owner.api.delete(`${rules}/${encodeURIComponent("#COUNTER")}`)).status).toBe(404);

    const first = listed.body.rules[0].ruleId;
    expect((await owner.api.delete(`${rules}/${first}`)).status).toBe(200);
    const again = await owner.api.post(rules, { effect: "deny", priority: 1, pathPattern: pattern });
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(await storedItem(keys.rule(clientId, parent, "#COUNTER"), US)).toMatchObject({
      ruleCount: fits,
      patternCost: fits * cost,
    });
  });

  it("refuses too many checks and a too complex pattern with 400 naming the field", async () => {
    const rules = `/api/clients/${clientId}/targets/${await targetId()}/rules`;
    const tooMany = await owner.api.post(rules, {
      effect: "deny",
      priority: 1,
      headerChecks: Array.from({ length: MAX_HEADER_CHECKS + 1 }, (_, i) => ({ name: `x-${i}` })),
    });
    expect(tooMany.status).toBe(400);
    expect(JSON.stringify(tooMany.body)).toContain("headerChecks");
    const complex = await owner.api.post(rules, {
      effect: "deny",
      priority: 1,
      queryChecks: [{ name: "q", pattern: `[a-z]{${MAX_PATTERN_INSTRUCTIONS + 1}}` }],
    });
    expect(complex.status).toBe(400);
    expect(JSON.stringify(complex.body)).toContain("queryChecks.0.pattern");
    expect(JSON.stringify(complex.body)).toContain("too complex");
  });
});
