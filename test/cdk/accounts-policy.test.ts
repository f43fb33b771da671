/**
 * The accounts policy of the CDK context (docs/accounts.md): signUpPolicy, signUpAllowedDomains and
 * authRequestsPerIpPerMinute reach the auth function's environment, with their defaults, and a bad
 * value fails synthesis.
 */
import { describe, expect, it } from "vitest";
import { ACCOUNT, buildTestApp, logicalId, Template } from "./helpers.ts";

function authVariables(context: Record<string, unknown>): Record<string, string> {
  const home = buildTestApp(context, { account: ACCOUNT }).homeStack;
  const functions = Template.fromStack(home).findResources("AWS::Lambda::Function");
  return functions[logicalId(home.groupFunctions.auth.function)]?.Properties.Environment.Variables;
}

describe("HomeStack: accounts policy from the context", () => {
  it("defaults: open sign-up, any domain, 300 /auth requests per IP and minute", () => {
    const variables = authVariables({});
    expect(variables).toMatchObject({ SIGN_UP_POLICY: "open", AUTH_REQUESTS_PER_IP_PER_MINUTE: "300" });
    expect(variables).not.toHaveProperty("SIGN_UP_ALLOWED_DOMAINS");
  });

  it("passes invite-only, the allowed domains (a comma list, lower-cased) and the per-IP limit", () => {
    const variables = authVariables({
      signUpPolicy: "invite-only",
      signUpAllowedDomains: "Example.com, example.org",
      authRequestsPerIpPerMinute: "60",
    });
    expect(variables).toMatchObject({
      SIGN_UP_POLICY: "invite-only",
      SIGN_UP_ALLOWED_DOMAINS: "example.com,example.org",
      AUTH_REQUESTS_PER_IP_PER_MINUTE: "60",
    });
  });

  it("sets the policy on the auth function only", () => {
    const home = buildTestApp({ signUpPolicy: "invite-only" }, { account: ACCOUNT }).homeStack;
    const functions = Template.fromStack(home).findResources("AWS::Lambda::Function");
    const withPolicy = Object.entries(functions)
      .filter(([, fn]) => fn.Properties.Environment?.Variables?.SIGN_UP_POLICY)
      .map(([id]) => id);
    expect(withPolicy).toEqual([logicalId(home.groupFunctions.auth.function)]);
  });

  it("gives the per-IP limit to the MCP function too (the consent page's password attempts count on it)", () => {
    const home = buildTestApp({ authRequestsPerIpPerMinute: "60" }, { account: ACCOUNT }).homeStack;
    const functions = Template.fromStack(home).findResources("AWS::Lambda::Function");
    const withLimit = Object.entries(functions)
      .filter(([, fn]) => fn.Properties.Environment?.Variables?.AUTH_REQUESTS_PER_IP_PER_MINUTE === "60")
      .map(([id]) => id)
      .sort();
    expect(withLimit).toEqual(
      [logicalId(home.groupFunctions.auth.function), logicalId(home.mcp.function.function)].sort(),
    );
  });

  it("refuses an unknown policy and a malformed domain", () => {
    expect(() => buildTestApp({ signUpPolicy: "closed" })).toThrow(/signUpPolicy/);
    expect(() => buildTestApp({ signUpAllowedDomains: "not a domain" })).toThrow(/signUpAllowedDomains/);
  });
});
