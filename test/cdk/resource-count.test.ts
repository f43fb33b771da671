/**
 * CloudFormation refuses a stack of more than 500 resources (and a template over 1 MB). Every
 * stack of the app must stay far below: under 300 resources, so that the next features (accounts
 * routes, the console's distribution and bucket, billing) fit without restructuring. The counts
 * are printed in the test output.
 *
 * The app is built as `cdk synth` builds it, with the CLI's version reporting on (its
 * AWS::CDK::Metadata resource counts too).
 */
import { Stack } from "aws-cdk-lib";
import { describe, expect, it } from "vitest";
import { CORE_API_ROUTES } from "#lib/api/routes.ts";
import { ACCOUNT, buildTestApp, Template } from "./helpers.ts";

const MAX_RESOURCES_PER_STACK = 300;
/** CloudFormation's limit on a template uploaded through S3, as the CLI does. */
const MAX_TEMPLATE_BYTES = 1_000_000;

const { app, homeStack } = buildTestApp({ "aws:cdk:version-reporting": true }, { account: ACCOUNT });
const stacks = app.node.findAll().filter((construct): construct is Stack => Stack.isStack(construct));
const figures = stacks.map((stack) => {
  const template = Template.fromStack(stack).toJSON() as { Resources?: Record<string, { Type: string }> };
  const resources = Object.values(template.Resources ?? {});
  return {
    stack: stack.node.path,
    resources: resources.length,
    // As `cdk synth` writes (and the CLI uploads) it: indented by one space.
    bytes: JSON.stringify(template, undefined, 1).length,
    types: resources.map((resource) => resource.Type),
  };
});

describe("stack size", () => {
  it("prints each stack's resource count", () => {
    for (const figure of figures) {
      console.log(`${figure.stack}: ${figure.resources} resources, ${figure.bytes} bytes of template`);
    }
    expect(figures.map((figure) => figure.stack)).toContain(homeStack.node.path);
    // Counted as the CLI deploys them: the version-reporting resource is there.
    expect(figures.every((figure) => figure.types.includes("AWS::CDK::Metadata"))).toBe(true);
  });

  it.each(figures.map((figure) => [figure.stack, figure] as const))(
    `%s has fewer than ${MAX_RESOURCES_PER_STACK} resources and a template under 1 MB`,
    (_, figure) => {
      expect(figure.resources).toBeLessThan(MAX_RESOURCES_PER_STACK);
      expect(figure.bytes).toBeLessThan(MAX_TEMPLATE_BYTES);
    },
  );

  it("adds no resource per operation: the Core API is a REST API, a deployment and a stage, whatever its routes", () => {
    const home = figures.find((figure) => figure.stack === homeStack.node.path);
    expect(CORE_API_ROUTES.length).toBeGreaterThan(100);
    const apiGateway = home?.types.filter((type) => type.startsWith("AWS::ApiGateway::")).sort();
    expect(apiGateway).toEqual([
      "AWS::ApiGateway::Deployment",
      "AWS::ApiGateway::RestApi",
      "AWS::ApiGateway::Stage",
    ]);
    // One invoke permission per function (its routes' group), not per method: fewer than 1 per 4 routes.
    const permissions = home?.types.filter((type) => type === "AWS::Lambda::Permission") ?? [];
    expect(permissions.length).toBeLessThan(CORE_API_ROUTES.length / 4);
  });
});
