import { existsSync } from "node:fs";
import { join } from "node:path";
import { Stack } from "aws-cdk-lib";
import { describe, expect, it } from "vitest";
import {
  AUTHORIZER_FUNCTION,
  FUNCTION_GROUPS,
  MCP_FUNCTION,
  SCHEDULED_FUNCTIONS,
} from "#lib/infra/api-manifest.ts";
import { REGION_STREAM_FUNCTION, TELEMETRY_STREAM_FUNCTION } from "#lib/infra/region-stream.ts";
import { buildTestApp, CDK_CONTEXT, PROJECT_ROOT, STUB_FUNCTIONS_DIR } from "./helpers.ts";

const FUNCTION_NAMES = [
  ...Object.values(FUNCTION_GROUPS).map((group) => group.name),
  AUTHORIZER_FUNCTION.name,
  MCP_FUNCTION.name,
  ...Object.values(SCHEDULED_FUNCTIONS).map((job) => job.name),
  REGION_STREAM_FUNCTION.name,
  TELEMETRY_STREAM_FUNCTION.name,
];

describe("buildApp", () => {
  it("creates one regional stack per region and the home stack, from cdk.json's context", () => {
    const { app, regionalStacks, homeStack, settings } = buildTestApp();
    const regions = CDK_CONTEXT.regions as string[];
    expect(Object.keys(regionalStacks).sort()).toEqual([...regions].sort());
    expect(app.node.children.filter((child) => Stack.isStack(child))).toHaveLength(regions.length + 1);
    expect(homeStack.region).toBe(CDK_CONTEXT.homeRegion);
    // No appUrl in cdk.json: the console's own distribution URL (through a parameter).
    expect(settings.appUrl).toBeUndefined();
    // Without CDK_DEFAULT_ACCOUNT the stacks stay account-agnostic.
    expect(homeStack.account).toMatch(/^\$\{Token\[AWS\.AccountId/);
  });

  it("follows the context: a third region gets its own stack and the home stack waits for it", () => {
    const { regionalStacks, homeStack } = buildTestApp({ regions: "us-east-1, eu-west-1,ap-southeast-2" });
    expect(Object.keys(regionalStacks)).toEqual(["us-east-1", "eu-west-1", "ap-southeast-2"]);
    expect(regionalStacks["ap-southeast-2"]?.stackName).toBe(
      `${CDK_CONTEXT.appName}-regional-ap-southeast-2`,
    );
    expect(homeStack.dependencies).toContain(regionalStacks["ap-southeast-2"]);
  });

  it("pins the account when given (CDK_DEFAULT_ACCOUNT)", () => {
    const { homeStack, regionalStacks } = buildTestApp({}, { account: "111122223333" });
    expect(homeStack.account).toBe("111122223333");
    for (const stack of Object.values(regionalStacks)) expect(stack.account).toBe("111122223333");
  });

  it.each([
    [{ homeRegion: "ap-south-1" }, /homeRegion: must be one of regions/],
    [{ emailSender: "not-an-address" }, /emailSender/],
    [{ appUrl: "app.example.com" }, /appUrl/],
    [{ appName: "x" }, /appName/],
    [{ regions: [] }, /regions/],
    [{ stripeSecretArn: "stripe-key" }, /stripeSecretArn: not a Secrets Manager secret ARN/],
    [
      { stripeSecretArn: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:stripe-AbCdEf" },
      /stripeSecretArn: the secret must be in homeRegion/,
    ],
    [{ dataPlaneUrls: "{not json" }, /dataPlaneUrls/],
    [{ stripePrices: "{not json" }, /stripePrices/],
    [{ stripePrices: { team: "team-monthly" } }, /stripePrices\.team: not a Stripe price id/],
    [{ stripePrices: { basic: "price_free" } }, /stripePrices/],
    [{ mcpDeleteEnabled: "yes" }, /mcpDeleteEnabled/],
    [{ mcpAllowedOrigins: "https://agent.example.com/callback" }, /mcpAllowedOrigins\.0: not an origin/],
    [{ mcpAllowedOrigins: ["agent.example.com"] }, /mcpAllowedOrigins/],
    [{ trustCloudFrontViewerCountry: "yes" }, /trustCloudFrontViewerCountry/],
  ])("rejects invalid context %j", (override, message) => {
    expect(() => buildTestApp(override)).toThrow(message);
  });

  it("reads the MCP settings: off and empty by default, booleans and comma lists from -c", () => {
    expect(buildTestApp().settings).toMatchObject({ mcpDeleteEnabled: false, mcpAllowedOrigins: [] });
    expect(
      buildTestApp({
        mcpDeleteEnabled: "true",
        mcpAllowedOrigins: " https://a.example.com,http://localhost:6274 ",
      }).settings,
    ).toMatchObject({
      mcpDeleteEnabled: true,
      mcpAllowedOrigins: ["https://a.example.com", "http://localhost:6274"],
    });
    expect(buildTestApp({ mcpDeleteEnabled: false }).settings.mcpDeleteEnabled).toBe(false);
  });

  it("points every function at an entry of the stub directory in tests", () => {
    for (const name of FUNCTION_NAMES) expect(existsSync(join(STUB_FUNCTIONS_DIR, `${name}.ts`))).toBe(true);
  });

  it("finds the real entry point functions/<name>.ts of every function (needed by `npm run synth`)", () => {
    const missing = FUNCTION_NAMES.filter(
      (name) => !existsSync(join(PROJECT_ROOT, "functions", `${name}.ts`)),
    );
    expect(missing).toEqual([]);
  });
});
