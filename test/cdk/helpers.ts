/**
 * Shared helpers of the CDK tests: build the app from cdk.json's context with bundling disabled
 * (esbuild never runs) and read policies, ARNs and API paths out of synthesized templates.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type CfnElement, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import type { IConstruct } from "constructs";
import { type BuildAppOptions, buildApp, type GatewayApp } from "../../cdk/build-app.ts";
import type { GatewayFunction } from "../../cdk/constructs/gateway-function.ts";

const HERE = dirname(fileURLToPath(import.meta.url));
export const PROJECT_ROOT = join(HERE, "..", "..");
/** Stub entry points, one per function of the manifest: the infra tests do not depend on handler code. */
export const STUB_FUNCTIONS_DIR = join(HERE, "fixtures", "functions");
export const ACCOUNT = "123456789012";

/** cdk.json's context, exactly what `cdk synth` reads. */
export const CDK_CONTEXT: Record<string, unknown> = JSON.parse(
  readFileSync(join(PROJECT_ROOT, "cdk.json"), "utf8"),
).context;

export function buildTestApp(
  contextOverrides: Record<string, unknown> = {},
  options: Omit<BuildAppOptions, "context" | "bundling"> = {},
): GatewayApp {
  return buildApp({
    context: { ...CDK_CONTEXT, ...contextOverrides },
    bundling: false,
    functionsDir: STUB_FUNCTIONS_DIR,
    ...options,
  });
}

export const logicalId = (construct: IConstruct): string =>
  Stack.of(construct).getLogicalId((construct.node.defaultChild ?? construct) as CfnElement);

type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** A CloudFormation value as text: `{Ref: X}` -> `<X>`, GetAtt -> `<X.Attr>`, joins flattened. */
export function flat(value: Json | undefined): string {
  if (value === undefined || value === null) return "";
  if (typeof value !== "object") return String(value);
  if (Array.isArray(value)) return value.map(flat).join(",");
  if ("Ref" in value) return `<${flat(value.Ref)}>`;
  if ("Fn::GetAtt" in value) return `<${(value["Fn::GetAtt"] as Json[]).map(flat).join(".")}>`;
  if ("Fn::Join" in value) {
    const [delimiter, parts] = value["Fn::Join"] as [string, Json[]];
    return parts.map(flat).join(delimiter);
  }
  return JSON.stringify(value);
}

export interface Statement {
  Effect: string;
  Action: string[];
  Resource: string[];
}

const asList = (value: Json | undefined): Json[] =>
  Array.isArray(value) ? value : value === undefined ? [] : [value];

/** Every statement of every policy attached to the role of `fn`, with actions and resources as text. */
export function statementsOf(template: Template, fn: GatewayFunction): Statement[] {
  const roleId = logicalId(fn.role);
  const policies = Object.values(template.findResources("AWS::IAM::Policy")) as {
    Properties: { Roles: Json[]; PolicyDocument: { Statement: Record<string, Json>[] } };
  }[];
  const statements = policies
    .filter((policy) => policy.Properties.Roles.some((role) => flat(role) === `<${roleId}>`))
    .flatMap((policy) => policy.Properties.PolicyDocument.Statement);
  return statements.map((statement) => ({
    Effect: String(statement.Effect),
    Action: asList(statement.Action).map(flat),
    Resource: asList(statement.Resource).map(flat),
  }));
}

/** All the statements of every IAM policy (inline or managed) of a template. */
export function allStatements(template: Template): Statement[] {
  const docs: { Statement: Record<string, Json>[] }[] = [];
  for (const policy of Object.values(template.findResources("AWS::IAM::Policy"))) {
    docs.push(policy.Properties.PolicyDocument);
  }
  for (const policy of Object.values(template.findResources("AWS::IAM::ManagedPolicy"))) {
    docs.push(policy.Properties.PolicyDocument);
  }
  for (const role of Object.values(template.findResources("AWS::IAM::Role"))) {
    for (const inline of role.Properties.Policies ?? []) docs.push(inline.PolicyDocument);
  }
  return docs.flatMap((doc) =>
    doc.Statement.map((statement) => ({
      Effect: String(statement.Effect),
      Action: asList(statement.Action).map(flat),
      Resource: asList(statement.Resource).map(flat),
    })),
  );
}

/** Full path ("/api/clients/{clientId}") of every AWS::ApiGateway::Resource, by logical id. */
export function apiResourcePaths(template: Template): Map<string, string> {
  const resources = template.findResources("AWS::ApiGateway::Resource") as Record<
    string,
    { Properties: { ParentId: Json; PathPart: string } }
  >;
  const paths = new Map<string, string>();
  const pathOf = (id: string): string => {
    const known = paths.get(id);
    if (known) return known;
    const resource = resources[id];
    if (!resource) throw new Error(`unknown API resource ${id}`);
    const parent = resource.Properties.ParentId;
    const parentRef =
      typeof parent === "object" && parent && "Ref" in parent ? String(parent.Ref) : undefined;
    const path = `${parentRef ? pathOf(parentRef) : ""}/${resource.Properties.PathPart}`;
    paths.set(id, path);
    return path;
  };
  for (const id of Object.keys(resources)) pathOf(id);
  return paths;
}

export const tableArn = (region: string, account = ACCOUNT, name = String(CDK_CONTEXT.appName)) =>
  `arn:aws:dynamodb:${region}:${account}:table/${name}`;

export { Template };
