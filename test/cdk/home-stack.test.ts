import { Match } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { CORE_API_ROUTES } from "#lib/api/routes.ts";
import { accountKeys } from "#lib/db/entities/account.ts";
import { keys } from "#lib/db/keys.ts";
import {
  AUTHORIZER_FUNCTION,
  AUTHORIZER_UPDATES,
  FUNCTION_GROUPS,
  type FunctionGroup,
  type FunctionGroupName,
  MCP_FUNCTION,
  REQUEST_ACCOUNTING_KEY_PREFIXES,
  SCHEDULED_FUNCTIONS,
  UNAUTHORIZED_MESSAGE,
} from "#lib/infra/api-manifest.ts";
import type { GatewayFunction } from "../../cdk/constructs/gateway-function.ts";
import { TABLE_READ_ACTIONS, TABLE_WRITE_ACTIONS } from "../../cdk/constructs/gateway-function.ts";
import { MCP_CORS_ALLOWED_HEADERS, MCP_MEMORY_MB, MCP_TIMEOUT } from "../../cdk/stacks/home-stack.ts";
import {
  ACCOUNT,
  type ApiBody,
  allStatements,
  buildTestApp,
  CDK_CONTEXT,
  flat,
  logicalId,
  restApiBody,
  type Statement,
  statementsOf,
  Template,
  tableArn,
} from "./helpers.ts";

const built = buildTestApp({}, { account: ACCOUNT });
/** Logical id prefix of aws-cdk-lib's BucketDeployment handler (function and role), the console's upload. */
const BUCKET_DEPLOYMENT_HANDLER = "CustomCDKBucketDeployment";
const home = built.homeStack;
const template = Template.fromStack(home);
const appName = String(CDK_CONTEXT.appName);
const homeRegion = String(CDK_CONTEXT.homeRegion);
const regions = CDK_CONTEXT.regions as string[];
const otherRegions = regions.filter((region) => region !== homeRegion);

const functions = template.findResources("AWS::Lambda::Function");
const allGatewayFunctions: [string, GatewayFunction][] = [
  ...Object.entries(home.groupFunctions),
  ["authorizer", home.authorizerFunction],
  ...Object.entries(home.scheduledFunctions),
  ["mcp", home.mcp.function],
];

/** The unconditional DynamoDB statements: a group's manifest access (conditioned ones are tested apart). */
const dynamoStatements = (statements: Statement[]) =>
  statements.filter(
    (statement) => !statement.Condition && statement.Action.some((action) => action.startsWith("dynamodb:")),
  );
/** The conditioned DynamoDB statements: the request accounting writes of read-only groups. */
const conditionedDynamoStatements = (fn: GatewayFunction) =>
  statementsOf(template, fn).filter(
    (statement) => statement.Condition && statement.Action.some((action) => action.startsWith("dynamodb:")),
  );
const dynamoResources = (fn: GatewayFunction) =>
  dynamoStatements(statementsOf(template, fn)).flatMap((statement) => statement.Resource);
const dynamoActions = (fn: GatewayFunction) =>
  new Set(dynamoStatements(statementsOf(template, fn)).flatMap((statement) => statement.Action));
const withIndexes = (arns: string[]) => arns.flatMap((arn) => [arn, `${arn}/index/*`]).sort();

describe("HomeStack", () => {
  it("is deployed in the home region after every regional stack", () => {
    expect(home.region).toBe(homeRegion);
    expect(home.stackName).toBe(`${appName}-home`);
    const dependencies = home.dependencies.map((stack) => stack.stackName).sort();
    expect(dependencies).toEqual(regions.map((region) => `${appName}-regional-${region}`).sort());
  });

  describe("functions", () => {
    it("has one function per group, the authorizer and the scheduled jobs", () => {
      expect(Object.keys(home.groupFunctions).sort()).toEqual(Object.keys(FUNCTION_GROUPS).sort());
      expect(Object.keys(home.scheduledFunctions).sort()).toEqual(Object.keys(SCHEDULED_FUNCTIONS).sort());
      expect(home.mcp.function.function.node.path).toMatch(/\/Mcp\/Function$/);
      // Besides them, only aws-cdk-lib's BucketDeployment handler (the console's upload, console-site.test.ts).
      const ours = Object.keys(functions).filter((id) => !id.startsWith(BUCKET_DEPLOYMENT_HANDLER));
      expect(Object.keys(functions).length - ours.length).toBe(1);
      expect(ours).toHaveLength(allGatewayFunctions.length);
    });

    it.each(allGatewayFunctions)(
      "%s: current Node.js on arm64, traced, with explicit timeout and memory",
      (_, fn) => {
        const props = functions[logicalId(fn.function)]?.Properties;
        expect(props.Runtime).toMatch(/^nodejs(2[2-9]|[3-9]\d)\.x$/);
        expect(props.Architectures).toEqual(["arm64"]);
        expect(props.TracingConfig).toEqual({ Mode: "Active" });
        expect(props.Handler).toBe("index.handler");
        expect(props.Timeout).toBeGreaterThan(0);
        expect(props.Timeout).toBeLessThanOrEqual(900);
        expect(props.MemorySize).toBeGreaterThanOrEqual(128);
      },
    );

    it("keeps API functions under API Gateway's 29 s integration timeout", () => {
      for (const fn of [...Object.values(home.groupFunctions), home.authorizerFunction]) {
        expect(functions[logicalId(fn.function)]?.Properties.Timeout).toBeLessThan(29);
      }
    });

    it.each(allGatewayFunctions)("%s: logs to its own log group with a retention", (_, fn) => {
      const props = functions[logicalId(fn.function)]?.Properties;
      const logGroupId = logicalId(fn.logGroup);
      expect(props.LoggingConfig).toEqual({ LogGroup: { Ref: logGroupId } });
      const logGroup = template.findResources("AWS::Logs::LogGroup")[logGroupId];
      expect(logGroup?.Properties.RetentionInDays).toBeGreaterThan(0);
    });

    it.each(allGatewayFunctions)("%s: gets the environment lib/config.ts reads", (_, fn) => {
      const variables = functions[logicalId(fn.function)]?.Properties.Environment.Variables;
      expect(variables).toMatchObject({
        TABLE_NAME: appName,
        HOME_REGION: homeRegion,
        REGIONS: regions.join(","),
        KMS_KEY_ALIAS: `alias/${appName}`,
        EMAIL_SENDER: CDK_CONTEXT.emailSender,
        // No appUrl in cdk.json: the console's URL comes from the parameter the stack writes.
        APP_URL_PARAMETER: `/${appName}/app-url`,
        NODE_OPTIONS: "--enable-source-maps",
      });
      // Measured, not enabled: a cached stack shares one execution context between calls.
      expect(variables).not.toHaveProperty("SDK_CACHE_MIDDLEWARE");
      expect(variables).not.toHaveProperty("APP_URL");
      // Not configured in cdk.json: absent rather than empty.
      expect(variables).not.toHaveProperty("DATA_PLANE_URLS");
      expect(variables).not.toHaveProperty("STRIPE_SECRET_ARN");
      expect(variables).not.toHaveProperty("STRIPE_SECRET_KEY");
    });

    it("uses no AWS-managed policy: each role has only its own inline permissions", () => {
      const roles = Object.entries(template.findResources("AWS::IAM::Role"));
      // aws-cdk-lib's BucketDeployment handler role (basic execution policy, acknowledged in cdk-nag).
      expect(roles.filter(([id]) => id.startsWith(BUCKET_DEPLOYMENT_HANDLER))).toHaveLength(1);
      for (const [, role] of roles.filter(([id]) => !id.startsWith(BUCKET_DEPLOYMENT_HANDLER))) {
        expect(role.Properties.ManagedPolicyArns).toBeUndefined();
        expect(role.Properties.AssumeRolePolicyDocument.Statement).toEqual([
          { Action: "sts:AssumeRole", Effect: "Allow", Principal: { Service: "lambda.amazonaws.com" } },
        ]);
      }
    });

    it.each(allGatewayFunctions)("%s: writes logs only to its own log group", (_, fn) => {
      const logStatements = statementsOf(template, fn).filter((s) =>
        s.Action.some((a) => a.startsWith("logs:")),
      );
      expect(logStatements).toEqual([
        {
          Effect: "Allow",
          Action: ["logs:CreateLogStream", "logs:PutLogEvents"],
          Resource: [`<${logicalId(fn.logGroup)}.Arn>`],
        },
      ]);
    });
  });

  describe("least-privilege table access", () => {
    const read = [...TABLE_READ_ACTIONS].sort();
    const readWrite = [...TABLE_READ_ACTIONS, ...TABLE_WRITE_ACTIONS].sort();

    it("defines read as Get/BatchGet/Query/ConditionCheck/DescribeTable and write as Put/Update/Delete/BatchWrite", () => {
      expect(read).toEqual([
        "dynamodb:BatchGetItem",
        "dynamodb:ConditionCheckItem",
        "dynamodb:DescribeTable",
        "dynamodb:GetItem",
        "dynamodb:Query",
      ]);
      expect([...TABLE_WRITE_ACTIONS].sort()).toEqual([
        "dynamodb:BatchWriteItem",
        "dynamodb:DeleteItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
      ]);
    });

    const expectedTables = (tables: FunctionGroup["tables"]) =>
      tables === "none"
        ? []
        : tables.startsWith("all-regions")
          ? regions.map((r) => tableArn(r))
          : [tableArn(homeRegion)];
    const expectedActions = (tables: FunctionGroup["tables"]) =>
      tables === "none" ? [] : tables.endsWith("-read") ? read : readWrite;

    it.each(Object.entries(FUNCTION_GROUPS))("%s gets exactly its manifest access", (key, group) => {
      const fn = home.groupFunctions[key as FunctionGroupName];
      expect(dynamoResources(fn).sort()).toEqual(withIndexes(expectedTables(group.tables)));
      expect([...dynamoActions(fn)].sort()).toEqual(expectedActions(group.tables));
    });

    it("a read-only route group may UpdateItem only its requests' rate windows and token stamps in the home table", () => {
      // Every authenticated request updates its rate window and, once a minute, its token's last
      // use (lib/api/dispatch.ts); a group that only reads is granted exactly that, by key prefix.
      expect(REQUEST_ACCOUNTING_KEY_PREFIXES).toEqual(["RATE#", "TOKEN#"]);
      expect(keys.rateWindow("TOKEN#tok_1", 0).pKey.startsWith("RATE#")).toBe(true);
      expect(keys.userToken("ab".repeat(32)).pKey.startsWith("TOKEN#")).toBe(true);
      const readOnly = Object.entries(FUNCTION_GROUPS).filter(([, group]) =>
        ["home-read", "all-regions-read"].includes(group.tables),
      );
      expect(readOnly.map(([key]) => key).sort()).toEqual(["requests", "telemetry"]);
      for (const [key] of readOnly)
        expect(conditionedDynamoStatements(home.groupFunctions[key as FunctionGroupName]), key).toEqual([
          {
            Effect: "Allow",
            Action: ["dynamodb:UpdateItem"],
            Resource: [tableArn(homeRegion)],
            Condition: { "ForAllValues:StringLike": { "dynamodb:LeadingKeys": ["RATE#*", "TOKEN#*"] } },
          },
        ]);
      // Nothing else is granted a conditioned statement (the authorizer's is checked below).
      for (const [key, group] of Object.entries(FUNCTION_GROUPS))
        if (!readOnly.some(([name]) => name === key))
          expect(
            conditionedDynamoStatements(home.groupFunctions[key as FunctionGroupName]),
            group.name,
          ).toEqual([]);
    });

    it("the authorizer may UpdateItem only token stamps and two attributes of sessions in the home table", () => {
      // It stamps a token's last use (TOKEN#<hash>) and moves a session's idle expiry on
      // (USER#<userId> / SESSION#<hash>: LeadingKeys cannot scope the sort key, so the attributes
      // are fixed, and no update may return the item's other attributes).
      expect(AUTHORIZER_UPDATES.items).toEqual(["TOKEN#"]);
      expect(keys.userToken("ab".repeat(32)).pKey.startsWith("TOKEN#")).toBe(true);
      expect(accountKeys.session("u-1", "ab".repeat(32)).pKey.startsWith("USER#")).toBe(true);
      expect(conditionedDynamoStatements(home.authorizerFunction)).toEqual([
        {
          Effect: "Allow",
          Action: ["dynamodb:UpdateItem"],
          Resource: [tableArn(homeRegion)],
          Condition: { "ForAllValues:StringLike": { "dynamodb:LeadingKeys": ["TOKEN#*"] } },
        },
        {
          Effect: "Allow",
          Action: ["dynamodb:UpdateItem"],
          Resource: [tableArn(homeRegion)],
          Condition: {
            "ForAllValues:StringLike": { "dynamodb:LeadingKeys": ["USER#*"] },
            "ForAllValues:StringEquals": {
              "dynamodb:Attributes": ["pKey", "sKey", "lastSeenAt", "idleExpiresAt"],
            },
            StringEqualsIfExists: { "dynamodb:ReturnValues": ["NONE", "UPDATED_NEW"] },
          },
        },
      ]);
    });

    it("members (home-write) has no dynamodb action on another region's table", () => {
      const resources = dynamoResources(home.groupFunctions.members);
      expect(otherRegions.length).toBeGreaterThan(0);
      for (const region of otherRegions) {
        expect(resources.filter((arn) => arn.includes(`:dynamodb:${region}:`))).toEqual([]);
      }
      expect(resources).toContain(tableArn(homeRegion));
    });

    it("the authorizer reads the home table only and has no unconditioned write action", () => {
      const fn = home.authorizerFunction;
      expect(AUTHORIZER_FUNCTION.tables).toBe("home-read");
      expect([...dynamoActions(fn)].sort()).toEqual(read);
      for (const action of TABLE_WRITE_ACTIONS) expect(dynamoActions(fn).has(action)).toBe(false);
      expect(dynamoResources(fn).sort()).toEqual(withIndexes([tableArn(homeRegion)]));
    });

    it.each(Object.entries(SCHEDULED_FUNCTIONS))(
      "scheduled %s gets exactly its manifest access",
      (key, job) => {
        const fn = home.scheduledFunctions[key as keyof typeof SCHEDULED_FUNCTIONS];
        expect(["all-regions-write", "all-regions-read-home-write"]).toContain(job.tables);
        expect(dynamoResources(fn).sort()).toEqual(withIndexes(regions.map((r) => tableArn(r))));
        expect([...dynamoActions(fn)].sort()).toEqual(readWrite);
      },
    );

    it("the meter digest reads every region's table and writes only the home table", () => {
      const statements = dynamoStatements(statementsOf(template, home.scheduledFunctions.meterDigest));
      const writers = statements.filter((st) => st.Action.includes("dynamodb:PutItem"));
      expect(writers.flatMap((st) => st.Resource).sort()).toEqual(withIndexes([tableArn(homeRegion)]));
      const readers = statements.filter((st) => !st.Action.includes("dynamodb:PutItem"));
      expect(readers.flatMap((st) => st.Action).sort()).toEqual(read);
      expect(readers.flatMap((st) => st.Resource).sort()).toEqual(
        withIndexes(otherRegions.map((r) => tableArn(r))),
      );
    });

    it("no policy grants a wildcard dynamodb action, Scan, or dynamodb on Resource '*'", () => {
      const statements = dynamoStatements(allStatements(template));
      expect(statements.length).toBeGreaterThan(0);
      for (const statement of statements) {
        expect(statement.Action.filter((action) => action.includes("*"))).toEqual([]);
        expect(statement.Action).not.toContain("dynamodb:Scan");
        expect(statement.Resource).not.toContain("*");
        for (const resource of statement.Resource) {
          expect(resource).toMatch(
            new RegExp(`^arn:aws:dynamodb:[a-z0-9-]+:${ACCOUNT}:table/${appName}(/index/\\*)?$`),
          );
        }
      }
    });

    it("the only Resource '*' anywhere is X-Ray's and the console upload's invalidation (aws-cdk-lib's grant)", () => {
      const starActions = allStatements(template)
        .filter((statement) => statement.Resource.includes("*"))
        .flatMap((statement) => statement.Action);
      expect([...new Set(starActions)].sort()).toEqual([
        "cloudfront:CreateInvalidation",
        "cloudfront:GetInvalidation",
        "xray:PutTelemetryRecords",
        "xray:PutTraceSegments",
      ]);
    });
  });

  describe("secret keys (KMS)", () => {
    const kmsUsers = allGatewayFunctions.filter(([, fn]) =>
      statementsOf(template, fn).some((statement) => statement.Action.includes("kms:Decrypt")),
    );

    it("lets only the credentials and webhooks functions (and the MCP endpoint, which runs them) use the keys", () => {
      expect(kmsUsers.map(([name]) => name).sort()).toEqual(["credentials", "mcp", "webhooks"]);
    });

    it("grants GenerateDataKey and Decrypt on each region's gateway key, by alias and credential context only", () => {
      const policies = Object.values(template.findResources("AWS::IAM::Policy")) as {
        Properties: { PolicyDocument: { Statement: Record<string, any>[] } };
      }[];
      const kmsStatements = policies
        .flatMap((policy) => policy.Properties.PolicyDocument.Statement)
        .filter((statement) => [statement.Action].flat().includes("kms:Decrypt"));
      // CDK merges one function's per-region statements (same actions and conditions) into one.
      expect(kmsStatements.length).toBe(kmsUsers.length);
      for (const statement of kmsStatements) {
        expect([...statement.Action].sort()).toEqual(["kms:Decrypt", "kms:GenerateDataKey"]);
        const resources = [statement.Resource].flat().map(flat);
        expect(resources).toHaveLength(regions.length);
        for (const resource of resources) expect(resource).toMatch(/^arn:aws:kms:[a-z0-9-]+:\d+:key\/\*$/);
        expect(new Set(resources.map((resource) => resource.split(":")[3]))).toEqual(new Set(regions));
        expect(statement.Condition).toEqual({
          "ForAnyValue:StringEquals": { "kms:ResourceAliases": `alias/${appName}` },
          "ForAllValues:StringEquals": { "kms:EncryptionContextKeys": ["clientId", "credentialId"] },
        });
      }
    });
  });

  describe("e-mail and payments", () => {
    const senders = allGatewayFunctions.filter(([, fn]) =>
      statementsOf(template, fn).some((statement) => statement.Action.includes("ses:SendEmail")),
    );

    it("verifies the sender address as an SES identity", () => {
      template.hasResourceProperties("AWS::SES::EmailIdentity", { EmailIdentity: CDK_CONTEXT.emailSender });
    });

    it("lets only the invites, MSP, webhooks (billing changes to owners) and accounts functions, the meter digest and the MCP endpoint send e-mail, from the sender identity only", () => {
      expect(senders.map(([name]) => name)).toEqual([
        "invites",
        "msps",
        "webhooks",
        "auth",
        "meterDigest",
        "mcp",
      ]);
      const identityId = logicalId(home.emailIdentity);
      for (const fn of [
        home.groupFunctions.invites,
        home.groupFunctions.msps,
        home.groupFunctions.webhooks,
        home.groupFunctions.auth,
        home.scheduledFunctions.meterDigest,
        home.mcp.function,
      ]) {
        const sesStatements = statementsOf(template, fn).filter((s) =>
          s.Action.some((a) => a.startsWith("ses:")),
        );
        expect(sesStatements).toEqual([
          {
            Effect: "Allow",
            Action: ["ses:SendEmail"],
            Resource: [`arn:aws:ses:${homeRegion}:${ACCOUNT}:identity/<${identityId}>`],
          },
        ]);
      }
    });

    it("grants no Secrets Manager access and sets no STRIPE_SECRET_ARN without stripeSecretArn", () => {
      expect(
        allStatements(template).filter((s) => s.Action.some((a) => a.startsWith("secretsmanager:"))),
      ).toEqual([]);
    });
  });

  describe("Core API", () => {
    const apiId = logicalId(home.api);
    const body = restApiBody(template, apiId);
    const authorizerName = `${appName}-caller`;
    const operationsOf = (paths: ApiBody["paths"]) =>
      Object.entries(paths).flatMap(([path, item]) =>
        Object.entries(item).map(([method, operation]) => ({
          method: method.toUpperCase(),
          path,
          operation,
        })),
      );
    const operations = operationsOf(body.paths);
    const operationFor = (method: string, path: string) =>
      operations.filter((operation) => operation.method === method && operation.path === path);
    const integrationUri = (fn: GatewayFunction) =>
      `arn:aws:apigateway:${homeRegion}:lambda:path/2015-03-31/functions/<${logicalId(fn.function)}.Arn>/invocations`;

    it("is one REST API imported from its OpenAPI body, in OVERWRITE mode, regional", () => {
      const apis = template.findResources("AWS::ApiGateway::RestApi");
      expect(Object.keys(apis)).toEqual([apiId]);
      expect(apis[apiId]?.Properties).toMatchObject({
        Name: `${appName}-core-api`,
        Mode: "overwrite",
        EndpointConfiguration: { Types: ["REGIONAL"] },
        // An import takes the endpoint type from the parameters.
        Parameters: { endpointConfigurationTypes: "REGIONAL" },
      });
      expect(body.openapi).toMatch(/^3\.0\./);
    });

    it("declares methods, resources, the authorizer, the validator and the gateway responses in the body only", () => {
      // A separate resource would be deleted by the next OVERWRITE import of the body.
      for (const type of [
        "AWS::ApiGateway::Method",
        "AWS::ApiGateway::Resource",
        "AWS::ApiGateway::Authorizer",
        "AWS::ApiGateway::RequestValidator",
        "AWS::ApiGateway::GatewayResponse",
        "AWS::ApiGateway::Model",
      ]) {
        expect(Object.keys(template.findResources(type)), type).toEqual([]);
      }
    });

    it("has exactly the methods of CORE_API_ROUTES, nothing more", () => {
      const actual = operations.map((operation) => `${operation.method} ${operation.path}`);
      expect(actual.sort()).toEqual(CORE_API_ROUTES.map((route) => `${route.method} ${route.path}`).sort());
      expect(actual.length).toBeGreaterThan(100);
    });

    it.each(CORE_API_ROUTES.map((route) => [`${route.method} ${route.path}`, route] as const))(
      "%s -> its group's function through the authorizer (public routes: none)",
      (_, route) => {
        const [found, ...duplicates] = operationFor(route.method, route.path);
        expect(duplicates).toEqual([]);
        const operation = found?.operation;
        if (route.public) {
          expect(operation?.security ?? []).toEqual([]);
        } else {
          expect(operation?.security).toEqual([{ [authorizerName]: [] }]);
        }
        const integration = operation?.["x-amazon-apigateway-integration"];
        expect(integration).toMatchObject({ type: "aws_proxy", httpMethod: "POST" });
        expect(flat(integration?.uri)).toBe(integrationUri(home.groupFunctions[route.group]));
        // Every path parameter declared, required; the API-wide validator applies (no override).
        const names = [...route.path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]);
        expect(operation?.parameters ?? []).toEqual(
          names.map((name) => expect.objectContaining({ name, in: "path", required: true })),
        );
        expect(operation?.["x-amazon-apigateway-request-validator"]).toBeUndefined();
      },
    );

    it("leaves only the documentation, the accounts routes and the OAuth2 redirect without authorizer", () => {
      // The docs group serves the registry's own OpenAPI document and reference page (no account
      // data); the OAuth2 provider redirects the browser to /webhooks/oauth2 without a gateway
      // token, and the handler accepts only a single-use, expiring state. The accounts routes
      // (/auth/*: sign-up, sign-in, session, reset) are public by design: a person without a token
      // opens an account there, and the session routes read their own cookie.
      const unauthenticated = operations
        .filter((operation) => !operation.operation.security?.length)
        .map((operation) => `${operation.method} ${operation.path}`);
      const docs = CORE_API_ROUTES.filter((route) => route.group === "docs").map(
        (route) => `${route.method} ${route.path}`,
      );
      const accounts = [
        "POST /auth/sign-up",
        "POST /auth/verify-email",
        "POST /auth/resend-verification",
        "POST /auth/sign-in",
        "GET /auth/session",
        "POST /auth/sign-out",
        "GET /auth/sessions",
        "DELETE /auth/sessions/{sessionId}",
        "POST /auth/forgot-password",
        "POST /auth/reset-password",
        // Issue 33: the signed-in change reads the session cookie; the removal proves itself with
        // the reset's recovery token.
        "POST /auth/change-password",
        "POST /auth/passkeys/remove",
        "POST /auth/passkeys/registration-options",
        "POST /auth/passkeys/registration",
        "POST /auth/passkeys/authentication-options",
        "POST /auth/passkeys/authentication",
        "GET /auth/passkeys",
        "DELETE /auth/passkeys/{passkeyId}",
      ];
      expect(docs.length).toBeGreaterThan(0);
      // POST /webhooks/stripe: Stripe sends no token; the handler verifies the event's signature.
      expect(unauthenticated.sort()).toEqual(
        [...docs, ...accounts, "GET /webhooks/oauth2", "POST /webhooks/stripe"].sort(),
      );
    });

    it("lets API Gateway invoke each group function from this API's stage v1 only, with one permission", () => {
      const permissions = Object.values(template.findResources("AWS::Lambda::Permission"))
        .map((p) => p.Properties)
        .filter((p) => p.Principal === "apigateway.amazonaws.com")
        .map((p) => ({ fn: flat(p.FunctionName), action: p.Action, source: flat(p.SourceArn) }));
      const stageArn = `arn:aws:execute-api:${homeRegion}:${ACCOUNT}:<${apiId}>/v1/*/*`;
      const expected = [
        ...Object.values(home.groupFunctions).map((fn) => ({
          fn: `<${logicalId(fn.function)}.Arn>`,
          action: "lambda:InvokeFunction",
          source: stageArn,
        })),
        {
          fn: `<${logicalId(home.authorizerFunction.function)}.Arn>`,
          action: "lambda:InvokeFunction",
          source: `arn:aws:execute-api:${homeRegion}:${ACCOUNT}:<${apiId}>/authorizers/*`,
        },
      ];
      const byFunction = (a: { fn: string }, b: { fn: string }) => a.fn.localeCompare(b.fn);
      // Nothing else may be invoked by API Gateway (the scheduled jobs, the MCP function).
      expect(permissions.sort(byFunction)).toEqual(expected.sort(byFunction));
      for (const group of Object.keys(FUNCTION_GROUPS)) {
        expect(
          CORE_API_ROUTES.some((route) => route.group === group),
          group,
        ).toBe(true);
      }
    });

    it("authorizes with a REQUEST authorizer without cache or identity source (invoked for every request)", () => {
      const schemes = body.components.securitySchemes;
      expect(Object.keys(schemes)).toEqual([authorizerName]);
      const scheme = schemes[authorizerName];
      expect(scheme).toMatchObject({
        type: "apiKey",
        "x-amazon-apigateway-authtype": "custom",
        "x-amazon-apigateway-authorizer": { type: "request", authorizerResultTtlInSeconds: 0 },
      });
      // No identity source: with one, API Gateway would answer 401 to a cookie-only request
      // without invoking the authorizer (and caching would key on it).
      expect(Object.keys(scheme?.["x-amazon-apigateway-authorizer"] ?? {}).sort()).toEqual([
        "authorizerResultTtlInSeconds",
        "authorizerUri",
        "type",
      ]);
      expect(JSON.stringify(body)).not.toMatch(/identitySource/i);
      expect(flat(scheme?.["x-amazon-apigateway-authorizer"].authorizerUri)).toBe(
        integrationUri(home.authorizerFunction),
      );
    });

    it("validates request parameters and bodies", () => {
      const validator = body["x-amazon-apigateway-request-validator"];
      expect(body["x-amazon-apigateway-request-validators"]).toEqual({
        [validator]: { validateRequestParameters: true, validateRequestBody: true },
      });
    });

    it("redeploys the stage when the body changes", () => {
      const deploymentId = (stack: typeof home) =>
        Object.keys(Template.fromStack(stack).findResources("AWS::ApiGateway::Deployment"));
      const [current, ...others] = deploymentId(home);
      expect(others).toEqual([]);
      const changed = buildTestApp({ appName: `${CDK_CONTEXT.appName}-b` }, { account: ACCOUNT }).homeStack;
      expect(deploymentId(changed)).toHaveLength(1);
      expect(deploymentId(changed)).not.toContain(current);
      const [stage] = Object.values(template.findResources("AWS::ApiGateway::Stage"));
      expect(stage?.Properties.DeploymentId).toEqual({ Ref: current });
    });

    it("deploys stage v1 with tracing, JSON access logs and throttling", () => {
      const [stage, ...others] = Object.values(template.findResources("AWS::ApiGateway::Stage"));
      expect(others).toEqual([]);
      expect(stage?.Properties).toMatchObject({
        StageName: "v1",
        RestApiId: { Ref: apiId },
        TracingEnabled: true,
        AccessLogSetting: { DestinationArn: { "Fn::GetAtt": [expect.stringMatching(/AccessLogs/), "Arn"] } },
      });
      const format = JSON.parse(stage?.Properties.AccessLogSetting.Format);
      expect(format).toMatchObject({ requestId: "$context.requestId", status: "$context.status" });
      expect(JSON.stringify(format)).not.toMatch(/header|authorization/i);
      expect(stage?.Properties.MethodSettings).toEqual([
        expect.objectContaining({
          HttpMethod: "*",
          ResourcePath: "/*",
          ThrottlingRateLimit: expect.any(Number),
          ThrottlingBurstLimit: expect.any(Number),
          DataTraceEnabled: false,
        }),
      ]);
    });

    it("answers errors in JSON, and an unknown route with 404 Route not found", () => {
      const responses = body["x-amazon-apigateway-gateway-responses"];
      const json = (type: string) => responses[type]?.responseTemplates["application/json"];
      for (const type of ["DEFAULT_4XX", "DEFAULT_5XX"]) {
        expect(json(type)).toBe('{"message":$context.error.messageString}');
      }
      for (const type of ["AUTHORIZER_FAILURE", "AUTHORIZER_CONFIGURATION_ERROR"]) {
        expect(responses[type]).toMatchObject({ statusCode: "503" });
        expect(JSON.parse(json(type) ?? "")).toEqual({
          message: expect.stringMatching(/temporarily unavailable/),
        });
      }
      // A 401 says how to send the token (the local runner answers the same body).
      expect(responses.UNAUTHORIZED).toMatchObject({ statusCode: "401" });
      expect(json("UNAUTHORIZED")).toBe(JSON.stringify({ message: UNAUTHORIZED_MESSAGE }));
      expect(responses.MISSING_AUTHENTICATION_TOKEN).toMatchObject({ statusCode: "404" });
      expect(json("MISSING_AUTHENTICATION_TOKEN")).toBe('{"message":"Route not found"}');
    });

    it("outputs the API URL", () => {
      template.hasOutput("CoreApiUrl", {
        Value: {
          "Fn::Join": ["", Match.arrayWith([Match.stringLikeRegexp(`execute-api\\.${homeRegion}\\.`)])],
        },
      });
    });
  });

  describe("scheduled jobs", () => {
    it("runs the meter digest once per cadence, each rule passing its cadence and the event's time", () => {
      const fnId = logicalId(home.scheduledFunctions.meterDigest.function);
      const schedules = SCHEDULED_FUNCTIONS.meterDigest.schedules;
      const rules = Object.values(template.findResources("AWS::Events::Rule")).filter((rule) =>
        JSON.stringify(rule.Properties.Targets).includes(fnId),
      );
      expect(rules.map((rule) => rule.Properties.ScheduleExpression).sort()).toEqual(
        Object.values(schedules)
          .map((rule) => rule.expression)
          .sort(),
      );
      for (const rule of Object.values(schedules)) {
        const found = rules.find((candidate) => candidate.Properties.ScheduleExpression === rule.expression);
        const transformer = found?.Properties.Targets[0].InputTransformer;
        expect(transformer.InputPathsMap).toEqual({ time: "$.time" });
        expect(transformer.InputTemplate).toContain(`"cadence":"${rule.input.cadence}"`);
        expect(transformer.InputTemplate).toContain('"time":<time>');
        expect(found?.Properties.Targets[0].RetryPolicy).toEqual({
          MaximumEventAgeInSeconds: 3600,
          MaximumRetryAttempts: 2,
        });
      }
      expect(Object.values(schedules).map((rule) => rule.input.cadence)).toEqual([
        "minute",
        "hour",
        "day",
        "month",
      ]);
    });

    it.each(Object.entries(SCHEDULED_FUNCTIONS))("%s runs on its EventBridge schedule", (key, job) => {
      const fnId = logicalId(home.scheduledFunctions[key as keyof typeof SCHEDULED_FUNCTIONS].function);
      template.hasResourceProperties("AWS::Events::Rule", {
        ScheduleExpression: job.schedule,
        State: "ENABLED",
        Targets: [Match.objectLike({ Arn: { "Fn::GetAtt": [fnId, "Arn"] } })],
      });
      template.hasResourceProperties("AWS::Lambda::Permission", {
        Action: "lambda:InvokeFunction",
        Principal: "events.amazonaws.com",
        FunctionName: { "Fn::GetAtt": [fnId, "Arn"] },
      });
    });
  });
});

describe("HomeStack: the MCP endpoint", () => {
  const mcp = home.mcp;
  const fnId = logicalId(mcp.function.function);
  const keyId = logicalId(mcp.signingKey);
  const props = () => functions[fnId]?.Properties;
  /** Each statement as "action resource" pairs, without the per-function logs and X-Ray statements. */
  const grantsOf = (fn: GatewayFunction) =>
    new Set(
      statementsOf(template, fn)
        .filter((st) => !st.Action.some((a) => a.startsWith("logs:") || a.startsWith("xray:")))
        .flatMap((st) =>
          st.Action.flatMap((action) => st.Resource.map((resource) => `${action} ${resource}`)),
        ),
    );

  it("is functions/mcp.ts, 90 s and 1024 MB (above the data plane's 75 s for execute_proxy_read_request)", () => {
    expect(MCP_FUNCTION.name).toBe("mcp");
    expect(props()).toMatchObject({ Timeout: MCP_TIMEOUT.toSeconds(), MemorySize: MCP_MEMORY_MB });
    expect(MCP_TIMEOUT.toSeconds()).toBe(90);
    expect(props()?.Description).toMatch(/MCP endpoint/);
  });

  it("has a public, buffered function URL without CORS (the function authenticates every request)", () => {
    const urls = template.findResources("AWS::Lambda::Url");
    expect(Object.values(urls)).toHaveLength(1);
    expect(urls[logicalId(mcp.url)]?.Properties).toEqual({
      AuthType: "NONE",
      InvokeMode: "BUFFERED",
      TargetFunctionArn: { "Fn::GetAtt": [fnId, "Arn"] },
    });
    const permissions = Object.values(template.findResources("AWS::Lambda::Permission"))
      .map((p) => p.Properties)
      .filter((p) => p.Principal === "*");
    // Function URLs need both: InvokeFunctionUrl (auth NONE) and InvokeFunction via the URL only.
    expect(permissions).toEqual([
      {
        Action: "lambda:InvokeFunctionUrl",
        FunctionName: { "Fn::GetAtt": [fnId, "Arn"] },
        FunctionUrlAuthType: "NONE",
        Principal: "*",
      },
      {
        Action: "lambda:InvokeFunction",
        FunctionName: { "Fn::GetAtt": [fnId, "Arn"] },
        InvokedViaFunctionUrl: true,
        Principal: "*",
      },
    ]);
  });

  it("signs with an ECC_NIST_P256 SIGN_VERIFY key, retained, under its own alias", () => {
    const key = template.findResources("AWS::KMS::Key")[keyId];
    expect(key?.Properties).toMatchObject({
      KeySpec: "ECC_NIST_P256",
      KeyUsage: "SIGN_VERIFY",
      EnableKeyRotation: false,
    });
    expect(key?.DeletionPolicy).toBe("Retain");
    expect(key?.UpdateReplacePolicy).toBe("Retain");
    // The key policy is KMS's default (the account administers it); no service or other principal.
    expect(key?.Properties.KeyPolicy.Statement).toEqual([
      { Action: "kms:*", Effect: "Allow", Principal: { AWS: `arn:aws:iam::${ACCOUNT}:root` }, Resource: "*" },
    ]);
    template.hasResourceProperties("AWS::KMS::Alias", {
      AliasName: `alias/${appName}-oauth-signing`,
      TargetKeyId: { "Fn::GetAtt": [keyId, "Arn"] },
    });
  });

  it("lets only the MCP function use the signing key, with kms:Sign and kms:GetPublicKey only", () => {
    const onKey = allStatements(template).filter((st) => st.Resource.includes(`<${keyId}.Arn>`));
    expect(onKey).toEqual([
      { Effect: "Allow", Action: ["kms:GetPublicKey", "kms:Sign"], Resource: [`<${keyId}.Arn>`] },
    ]);
    const mine = statementsOf(template, mcp.function).filter((st) => st.Resource.includes(`<${keyId}.Arn>`));
    expect(mine).toEqual(onKey);
    for (const [name, fn] of allGatewayFunctions) {
      if (fn === mcp.function) continue;
      const actions = statementsOf(template, fn).flatMap((st) => st.Action);
      expect(
        actions.filter((a) => a === "kms:Sign" || a === "kms:GetPublicKey"),
        name,
      ).toEqual([]);
    }
  });

  it("gets exactly the union of the route groups' grants, plus the signing key", () => {
    const union = new Set(Object.values(home.groupFunctions).flatMap((fn) => [...grantsOf(fn)]));
    const expected = [...union, `kms:GetPublicKey <${keyId}.Arn>`, `kms:Sign <${keyId}.Arn>`].sort();
    expect([...grantsOf(mcp.function)].sort()).toEqual(expected);
    // The union as the manifest derives it: every table read and written, e-mail, KMS, payments.
    expect(MCP_FUNCTION).toMatchObject({
      tables: "all-regions-write",
      sendsEmail: true,
      usesKms: true,
      usesPayments: true,
      callsOut: true,
    });
    expect(dynamoResources(mcp.function).sort()).toEqual(withIndexes(regions.map((r) => tableArn(r))));
  });

  it("gets OAUTH_SIGNING_KEY_ID, and DELETE_ENABLED off and no allowed origin by default", () => {
    expect(props()?.Environment.Variables).toMatchObject({
      OAUTH_SIGNING_KEY_ID: { Ref: keyId },
      DELETE_ENABLED: "false",
      MCP_ALLOWED_ORIGINS: "",
    });
    for (const fn of Object.values(home.groupFunctions)) {
      const variables = functions[logicalId(fn.function)]?.Properties.Environment.Variables;
      expect(Object.keys(variables)).not.toEqual(
        expect.arrayContaining(["OAUTH_SIGNING_KEY_ID", "DELETE_ENABLED", "MCP_ALLOWED_ORIGINS"]),
      );
    }
  });

  it("raises an alarm on any failed invocation (5 minutes, sum >= 1)", () => {
    const alarm = template.findResources("AWS::CloudWatch::Alarm")[logicalId(mcp.errorsAlarm)];
    expect(alarm?.Properties).toMatchObject({
      Namespace: "AWS/Lambda",
      MetricName: "Errors",
      Dimensions: [{ Name: "FunctionName", Value: { Ref: fnId } }],
      Statistic: "Sum",
      Period: 300,
      Threshold: 1,
      EvaluationPeriods: 1,
      ComparisonOperator: "GreaterThanOrEqualToThreshold",
      TreatMissingData: "notBreaching",
    });
  });

  it("outputs the MCP URL: the function URL (which ends with /) followed by mcp", () => {
    template.hasOutput("McpUrl", {
      Value: { "Fn::Join": ["", [{ "Fn::GetAtt": [logicalId(mcp.url), "FunctionUrl"] }, "mcp"]] },
    });
  });
});

describe("HomeStack with optional context", () => {
  const stripeSecretArn = `arn:aws:secretsmanager:${homeRegion}:${ACCOUNT}:secret:proxy-gateway/stripe-AbCdEf`;
  const dataPlaneUrls = Object.fromEntries(regions.map((r) => [r, `https://data.${r}.example.com`]));
  const stripePrices = { team: "price_team_monthly", enterprise_basic: "price_enterprise_basic_monthly" };
  const configured = buildTestApp(
    { stripeSecretArn, dataPlaneUrls, stripePrices: JSON.stringify(stripePrices) },
    { account: ACCOUNT },
  ).homeStack;
  const configuredTemplate = Template.fromStack(configured);
  const variablesOf = (fn: GatewayFunction) =>
    configuredTemplate.findResources("AWS::Lambda::Function")[logicalId(fn.function)]?.Properties.Environment
      .Variables;

  it("gives the payment groups STRIPE_SECRET_ARN and GetSecretValue on that secret only", () => {
    for (const [key, group] of Object.entries(FUNCTION_GROUPS)) {
      const fn = configured.groupFunctions[key as FunctionGroupName];
      const secretStatements = statementsOf(configuredTemplate, fn).filter((s) =>
        s.Action.some((a) => a.startsWith("secretsmanager:")),
      );
      if ("usesPayments" in group && group.usesPayments) {
        expect(variablesOf(fn).STRIPE_SECRET_ARN).toBe(stripeSecretArn);
        expect(secretStatements).toEqual([
          { Effect: "Allow", Action: ["secretsmanager:GetSecretValue"], Resource: [stripeSecretArn] },
        ]);
      } else {
        expect(variablesOf(fn)).not.toHaveProperty("STRIPE_SECRET_ARN");
        expect(secretStatements).toEqual([]);
      }
    }
  });

  it("gives the payment groups each configured tier's price (STRIPE_PRICE_<TIER>), and no other group", () => {
    for (const [key, group] of Object.entries(FUNCTION_GROUPS)) {
      const variables = variablesOf(configured.groupFunctions[key as FunctionGroupName]);
      const prices = Object.keys(variables).filter((name) => name.startsWith("STRIPE_PRICE_"));
      if ("usesPayments" in group && group.usesPayments) {
        expect(variables.STRIPE_PRICE_TEAM, key).toBe("price_team_monthly");
        expect(variables.STRIPE_PRICE_ENTERPRISE_BASIC, key).toBe("price_enterprise_basic_monthly");
        expect(prices.sort(), key).toEqual(["STRIPE_PRICE_ENTERPRISE_BASIC", "STRIPE_PRICE_TEAM"]);
      } else expect(prices, key).toEqual([]);
    }
  });

  it("gives the MCP endpoint STRIPE_SECRET_ARN and GetSecretValue too (it creates clients)", () => {
    expect(variablesOf(configured.mcp.function).STRIPE_SECRET_ARN).toBe(stripeSecretArn);
    expect(
      statementsOf(configuredTemplate, configured.mcp.function).filter((s) =>
        s.Action.some((a) => a.startsWith("secretsmanager:")),
      ),
    ).toEqual([{ Effect: "Allow", Action: ["secretsmanager:GetSecretValue"], Resource: [stripeSecretArn] }]);
  });

  it("sets no STRIPE_WEBHOOK_SECRET_ARN anywhere without stripeWebhookSecretArn", () => {
    for (const fn of Object.values(configured.groupFunctions))
      expect(variablesOf(fn)).not.toHaveProperty("STRIPE_WEBHOOK_SECRET_ARN");
  });

  it("gives every function DATA_PLANE_URLS as JSON", () => {
    for (const fn of [...Object.values(configured.groupFunctions), configured.authorizerFunction]) {
      expect(JSON.parse(variablesOf(fn).DATA_PLANE_URLS)).toEqual(dataPlaneUrls);
    }
  });
});

describe("HomeStack: the Stripe webhook's signing secret", () => {
  const webhookSecretArn = `arn:aws:secretsmanager:${homeRegion}:${ACCOUNT}:secret:proxy-gateway/stripe-webhook-XyZ123`;
  const configured = buildTestApp(
    { stripeWebhookSecretArn: webhookSecretArn },
    { account: ACCOUNT },
  ).homeStack;
  const configuredTemplate = Template.fromStack(configured);
  const variablesOf = (fn: GatewayFunction) =>
    configuredTemplate.findResources("AWS::Lambda::Function")[logicalId(fn.function)]?.Properties.Environment
      .Variables;
  const secretStatementsOf = (fn: GatewayFunction) =>
    statementsOf(configuredTemplate, fn).filter((s) => s.Action.some((a) => a.startsWith("secretsmanager:")));

  it("the webhooks function alone reads it (GetSecretValue on that one secret) and is told its ARN", () => {
    expect(variablesOf(configured.groupFunctions.webhooks).STRIPE_WEBHOOK_SECRET_ARN).toBe(webhookSecretArn);
    expect(secretStatementsOf(configured.groupFunctions.webhooks)).toEqual([
      { Effect: "Allow", Action: ["secretsmanager:GetSecretValue"], Resource: [webhookSecretArn] },
    ]);
    for (const fn of [
      ...Object.entries(configured.groupFunctions)
        .filter(([name]) => name !== "webhooks")
        .map(([, fn]) => fn),
      configured.authorizerFunction,
      configured.mcp.function,
    ]) {
      expect(variablesOf(fn)).not.toHaveProperty("STRIPE_WEBHOOK_SECRET_ARN");
      expect(secretStatementsOf(fn)).toEqual([]);
    }
  });

  it("POST /webhooks/stripe has no authorizer and is served by the webhooks function", () => {
    const body = restApiBody(configuredTemplate, logicalId(configured.api));
    const operation = body.paths["/webhooks/stripe"]?.post;
    expect(operation).toBeDefined();
    expect(operation?.security ?? []).toEqual([]);
    expect(JSON.stringify(operation?.["x-amazon-apigateway-integration"])).toContain(
      logicalId(configured.groupFunctions.webhooks.function),
    );
  });
});

describe("HomeStack: MCP settings from the context", () => {
  const origins = ["https://agent.example.com", "http://localhost:6274"];
  const configured = buildTestApp(
    { mcpDeleteEnabled: "true", mcpAllowedOrigins: origins.join(",") },
    { account: ACCOUNT },
  ).homeStack;
  const configuredTemplate = Template.fromStack(configured);

  it("sets DELETE_ENABLED=true and MCP_ALLOWED_ORIGINS as a comma list", () => {
    const variables =
      configuredTemplate.findResources("AWS::Lambda::Function")[logicalId(configured.mcp.function.function)]
        ?.Properties.Environment.Variables;
    expect(variables).toMatchObject({ DELETE_ENABLED: "true", MCP_ALLOWED_ORIGINS: origins.join(",") });
  });

  it("restricts the function URL's CORS to exactly those origins, for POST", () => {
    const url = configuredTemplate.findResources("AWS::Lambda::Url")[logicalId(configured.mcp.url)];
    expect(url?.Properties).toMatchObject({ AuthType: "NONE", InvokeMode: "BUFFERED" });
    expect(url?.Properties.Cors).toEqual({
      AllowOrigins: origins,
      AllowMethods: ["POST"],
      AllowHeaders: MCP_CORS_ALLOWED_HEADERS,
      ExposeHeaders: ["mcp-session-id", "www-authenticate"],
      MaxAge: 3600,
    });
    expect(url?.Properties.Cors.AllowCredentials).toBeUndefined();
  });
});
