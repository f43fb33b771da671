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
  /** The statement's conditions, as written in the template (absent: none). */
  Condition?: Json;
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
    ...(statement.Condition === undefined ? {} : { Condition: statement.Condition }),
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

/** The parts of the OpenAPI body of an AWS::ApiGateway::RestApi the tests read (values as synthesized). */
export interface ApiOperation {
  parameters?: { name: string; in: string; required?: boolean }[];
  security?: Record<string, string[]>[];
  "x-amazon-apigateway-integration"?: { type: string; httpMethod: string; uri: Json };
  "x-amazon-apigateway-request-validator"?: string;
}
export interface ApiBody {
  openapi: string;
  paths: Record<string, Record<string, ApiOperation>>;
  components: {
    securitySchemes: Record<
      string,
      Record<string, Json> & {
        "x-amazon-apigateway-authorizer": { type: string; authorizerUri: Json } & Record<string, Json>;
      }
    >;
  };
  "x-amazon-apigateway-request-validator": string;
  "x-amazon-apigateway-request-validators": Record<string, Record<string, boolean>>;
  "x-amazon-apigateway-gateway-responses": Record<
    string,
    { statusCode?: string; responseTemplates: Record<string, string> }
  >;
}

/** The OpenAPI body (Body) of the REST API `apiId` of a template. */
export function restApiBody(template: Template, apiId: string): ApiBody {
  const api = template.findResources("AWS::ApiGateway::RestApi")[apiId];
  if (!api?.Properties.Body) throw new Error(`no REST API ${apiId} with an OpenAPI body`);
  return api.Properties.Body as ApiBody;
}

export const tableArn = (region: string, account = ACCOUNT, name = String(CDK_CONTEXT.appName)) =>
  `arn:aws:dynamodb:${region}:${account}:table/${name}`;

export { Template };
