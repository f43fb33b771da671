/**
 * The control plane, deployed once in the home region: one Lambda per route group of the Core API
 * (lib/infra/api-manifest.ts), the token authorizer, the scheduled jobs, the SES sender identity
 * and the REST API whose resources and methods are generated from CORE_API_ROUTES.
 *
 * Tables are addressed by deterministic ARN (every region's table is named appName), so this stack
 * needs no cross-region reference to the RegionalStacks; it only deploys after them.
 *
 * The MCP endpoint (issue 13) lives here too: a function URL, not an API Gateway route (its
 * requests authenticate in the function, with a user token or an OAuth access token).
 */

import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps, Validations } from "aws-cdk-lib";
import * as apigateway from "aws-cdk-lib/aws-apigateway";
import type * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as events from "aws-cdk-lib/aws-events";
import * as targets from "aws-cdk-lib/aws-events-targets";
import * as kms from "aws-cdk-lib/aws-kms";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as logs from "aws-cdk-lib/aws-logs";
import * as ses from "aws-cdk-lib/aws-ses";
import type { Construct } from "constructs";
import { CORE_API_ROUTES } from "../../lib/api/routes.ts";
import {
  AUTHORIZER_FUNCTION,
  FUNCTION_GROUPS,
  type FunctionGroup,
  type FunctionGroupName,
  MCP_FUNCTION,
  type RouteDefinition,
  SCHEDULED_FUNCTIONS,
  type ScheduledFunction,
  SERVICE_UNAVAILABLE_MESSAGE,
  UNAUTHORIZED_MESSAGE,
} from "../../lib/infra/api-manifest.ts";
import { type AppSettings, kmsKeyAliasOf, oauthSigningKeyAliasOf, tableNameOf } from "../app-settings.ts";
import { GatewayFunction } from "../constructs/gateway-function.ts";

export interface HomeStackProps extends StackProps {
  readonly settings: AppSettings;
  /** Directory of the function entry points (tests use stubs); defaults to functions/. */
  readonly functionsDir?: string;
}

/** Stage-wide throttling (per account and region, API Gateway's own limit is 10,000 rps). */
export const API_THROTTLING = { rateLimit: 100, burstLimit: 200 } as const;
export const API_STAGE_NAME = "v1";

/** Request headers a browser client of the MCP endpoint sends (CORS, when origins are allowed). */
export const MCP_CORS_ALLOWED_HEADERS = [
  "authorization",
  "content-type",
  "accept",
  "mcp-protocol-version",
  "mcp-session-id",
  "last-event-id",
  "x-mcp-toolsets",
  "x-mcp-readonly",
];

/** "account-purge" -> "AccountPurge": construct ids derived from the manifest names. */
const pascal = (name: string) =>
  name
    .split(/[^A-Za-z0-9]+/)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join("");

/** Why a route has no authorizer (cdk-nag asks for one on every method). */
const publicRouteReason = (route: RouteDefinition): string =>
  route.group === "docs"
    ? "The API's own documentation (the OpenAPI document and its reference page), generated from the operation registry: no account data, no table access."
    : "The OAuth2 provider redirects the user's browser here without a gateway token; the handler accepts only a single-use, expiring state created by an authenticated credential creation.";

/**
 * The MCP function: above the data plane's 75 s (execute_proxy_read_request waits for a proxied
 * read, whose target may take up to 60 s), far below a function URL's 15 minutes. Memory as the
 * API groups (1024 MB on arm64): tools/list renders about 90 JSON schemas per request.
 */
export const MCP_TIMEOUT = Duration.seconds(90);
export const MCP_MEMORY_MB = 1024;

export interface McpEndpoint {
  readonly function: GatewayFunction;
  /** Public (auth NONE): the function authenticates every request (user token or OAuth access token). */
  readonly url: lambda.FunctionUrl;
  /** ECC_NIST_P256 SIGN_VERIFY: signs the OAuth access tokens (ES256); the private key never leaves KMS. */
  readonly signingKey: kms.Key;
  readonly errorsAlarm: cloudwatch.Alarm;
}

export class HomeStack extends Stack {
  readonly api: apigateway.RestApi;
  readonly groupFunctions: Record<FunctionGroupName, GatewayFunction>;
  readonly authorizerFunction: GatewayFunction;
  readonly scheduledFunctions: Record<keyof typeof SCHEDULED_FUNCTIONS, GatewayFunction>;
  readonly emailIdentity: ses.EmailIdentity;
  /** The MCP endpoint (issue 13): its function, function URL, OAuth signing key and errors alarm. */
  readonly mcp: McpEndpoint;

  constructor(scope: Construct, id: string, props: HomeStackProps) {
    super(scope, id, props);
    const { settings, functionsDir } = props;

    /** arn:<partition>:dynamodb:<region>:<account>:table/<appName>, without referencing that region's stack. */
    const tableArn = (region: string) =>
      this.formatArn({ service: "dynamodb", region, resource: "table", resourceName: tableNameOf(settings) });
    const homeTableArn = tableArn(settings.homeRegion);
    const allTableArns = settings.regions.map(tableArn);
    const bindTables = (fn: GatewayFunction, tables: FunctionGroup["tables"]) => {
      switch (tables) {
        case "none":
          return fn;
        case "home-read":
          return fn.bindTable(homeTableArn, "RO");
        case "home-write":
          return fn.bindTable(homeTableArn, "RW");
        case "all-regions-read":
          return fn.bindTable(allTableArns, "RO");
        case "all-regions-write":
          return fn.bindTable(allTableArns, "RW");
        case "all-regions-read-home-write": {
          const others = allTableArns.filter((arn) => arn !== homeTableArn);
          if (others.length > 0) fn.bindTable(others, "RO");
          return fn.bindTable(homeTableArn, "RW");
        }
      }
    };

    this.emailIdentity = new ses.EmailIdentity(this, "EmailSender", {
      identity: ses.Identity.email(settings.emailSender),
    });
    /** Everything a group's manifest entry asks for (the route groups, and the MCP endpoint's union of them). */
    const grantGroup = (fn: GatewayFunction, group: FunctionGroup) => {
      bindTables(fn, group.tables);
      if (group.sendsEmail) fn.allowSendEmail(this.emailIdentity.emailIdentityArn);
      if (group.usesKms) fn.allowSecretKeys(settings.regions, kmsKeyAliasOf(settings));
      if (group.usesPayments && settings.stripeSecretArn) {
        fn.addEnvironment("STRIPE_SECRET_ARN", settings.stripeSecretArn).allowReadSecret(
          settings.stripeSecretArn,
        );
      }
    };

    // One function per route group.
    const groupFunctions: Partial<Record<FunctionGroupName, GatewayFunction>> = {};
    for (const [key, group] of Object.entries(FUNCTION_GROUPS) as [FunctionGroupName, FunctionGroup][]) {
      const fn = new GatewayFunction(this, pascal(group.name), {
        name: group.name,
        settings,
        functionsDir,
        description: `${settings.appName} Core API: ${group.name}`,
        packageFiles: group.packageFiles,
      });
      grantGroup(fn, group);
      groupFunctions[key] = fn;
    }
    this.groupFunctions = groupFunctions as Record<FunctionGroupName, GatewayFunction>;

    this.authorizerFunction = new GatewayFunction(this, pascal(AUTHORIZER_FUNCTION.name), {
      name: AUTHORIZER_FUNCTION.name,
      settings,
      functionsDir,
      description: `${settings.appName} Core API token authorizer`,
      timeout: Duration.seconds(5),
    });
    bindTables(this.authorizerFunction, AUTHORIZER_FUNCTION.tables);

    // Scheduled jobs (EventBridge rules).
    const scheduled: Partial<Record<keyof typeof SCHEDULED_FUNCTIONS, GatewayFunction>> = {};
    for (const [key, job] of Object.entries(SCHEDULED_FUNCTIONS) as [
      keyof typeof SCHEDULED_FUNCTIONS,
      ScheduledFunction,
    ][]) {
      const fn = new GatewayFunction(this, pascal(job.name), {
        name: job.name,
        settings,
        functionsDir,
        description: `${settings.appName} scheduled job: ${job.name} (${job.schedule})`,
        timeout: Duration.minutes(5),
      });
      bindTables(fn, job.tables);
      if (job.sendsEmail) fn.allowSendEmail(this.emailIdentity.emailIdentityArn);
      const rules = job.schedules
        ? Object.entries(job.schedules).map(([suffix, rule]) => ({
            id: `${pascal(job.name)}${suffix}Schedule`,
            expression: rule.expression,
            // The rule's own input, plus the scheduled event's time (a late invocation digests its own periods).
            input: events.RuleTargetInput.fromObject({ ...rule.input, time: events.EventField.time }),
          }))
        : [{ id: `${pascal(job.name)}Schedule`, expression: job.schedule, input: undefined }];
      for (const rule of rules) {
        new events.Rule(this, rule.id, {
          description: `Runs ${job.name} ${rule.expression}`,
          schedule: events.Schedule.expression(rule.expression),
          targets: [
            new targets.LambdaFunction(fn.function, {
              retryAttempts: 2,
              maxEventAge: Duration.hours(1),
              event: rule.input,
            }),
          ],
        });
      }
      scheduled[key] = fn;
    }
    this.scheduledFunctions = scheduled as Record<keyof typeof SCHEDULED_FUNCTIONS, GatewayFunction>;

    this.mcp = this.buildMcp(settings, functionsDir, grantGroup);

    this.api = this.buildApi(settings);
    // One output with a stable name instead of RestApi's generated "CoreApiEndpointXXXX".
    this.api.node.tryRemoveChild("Endpoint");
    new CfnOutput(this, "CoreApiUrl", {
      description: "Base URL of the Core API (stage v1)",
      value: this.api.url,
    });
  }

  /**
   * The MCP endpoint: functions/mcp.ts behind a buffered Lambda function URL at `<url>mcp` (JSON
   * responses, no streaming), with the union of the route groups' grants (MCP_FUNCTION), Sign and
   * GetPublicKey on its own signing key, DELETE_ENABLED and MCP_ALLOWED_ORIGINS from the context.
   */
  private buildMcp(
    settings: AppSettings,
    functionsDir: string | undefined,
    grantGroup: (fn: GatewayFunction, group: FunctionGroup) => void,
  ): McpEndpoint {
    const signingKey = new kms.Key(this, "OAuthSigningKey", {
      alias: oauthSigningKeyAliasOf(settings),
      description: `${settings.appName}: signs the MCP endpoint's OAuth access tokens (ES256)`,
      keySpec: kms.KeySpec.ECC_NIST_P256,
      keyUsage: kms.KeyUsage.SIGN_VERIFY,
      // KMS rotates symmetric keys only; a new signing key is a new key (and a new kid).
      enableKeyRotation: false,
      removalPolicy: RemovalPolicy.RETAIN,
    });

    const fn = new GatewayFunction(this, pascal(MCP_FUNCTION.name), {
      name: MCP_FUNCTION.name,
      settings,
      functionsDir,
      description: `${settings.appName} MCP endpoint (tools over the Core API, OAuth 2.1)`,
      timeout: MCP_TIMEOUT,
      memorySize: MCP_MEMORY_MB,
    });
    grantGroup(fn, MCP_FUNCTION);
    fn.allowSigningKey(signingKey)
      .addEnvironment("OAUTH_SIGNING_KEY_ID", signingKey.keyId)
      .addEnvironment("DELETE_ENABLED", settings.mcpDeleteEnabled ? "true" : "false")
      .addEnvironment("MCP_ALLOWED_ORIGINS", settings.mcpAllowedOrigins.join(","));

    const url = fn.function.addFunctionUrl({
      authType: lambda.FunctionUrlAuthType.NONE,
      invokeMode: lambda.InvokeMode.BUFFERED,
      // No CORS unless the deployer allows browser origins, and then only those, for POST.
      ...(settings.mcpAllowedOrigins.length > 0
        ? {
            cors: {
              allowedOrigins: [...settings.mcpAllowedOrigins],
              allowedMethods: [lambda.HttpMethod.POST],
              allowedHeaders: MCP_CORS_ALLOWED_HEADERS,
              exposedHeaders: ["mcp-session-id", "www-authenticate"],
              maxAge: Duration.hours(1),
            },
          }
        : {}),
    });
    const errorsAlarm = fn.errorsAlarm(
      this,
      "McpErrors",
      `${settings.appName}: the MCP endpoint failed (an uncaught error or a timeout)`,
    );
    new CfnOutput(this, "McpUrl", {
      description: "URL of the MCP endpoint (Streamable HTTP, POST only)",
      value: `${url.url}mcp`,
    });
    return { function: fn, url, signingKey, errorsAlarm };
  }

  private buildApi(settings: AppSettings): apigateway.RestApi {
    const accessLogs = new logs.LogGroup(this, "CoreApiAccessLogs", {
      retention: logs.RetentionDays.THREE_MONTHS,
    });
    const field = apigateway.AccessLogField;
    const api = new apigateway.RestApi(this, "CoreApi", {
      restApiName: `${settings.appName}-core-api`,
      description: `${settings.appName} Core API (account management)`,
      endpointConfiguration: { types: [apigateway.EndpointType.REGIONAL] },
      // The account-wide API Gateway CloudWatch role is not this app's to manage (see APIG6 below).
      cloudWatchRole: false,
      deployOptions: {
        stageName: API_STAGE_NAME,
        tracingEnabled: true,
        throttlingRateLimit: API_THROTTLING.rateLimit,
        throttlingBurstLimit: API_THROTTLING.burstLimit,
        accessLogDestination: new apigateway.LogGroupLogDestination(accessLogs),
        // No header or body is logged: the Authorization token never reaches the access log.
        accessLogFormat: apigateway.AccessLogFormat.custom(
          JSON.stringify({
            requestId: field.contextRequestId(),
            extendedRequestId: field.contextExtendedRequestId(),
            requestTime: field.contextRequestTime(),
            ip: field.contextIdentitySourceIp(),
            userAgent: field.contextIdentityUserAgent(),
            httpMethod: field.contextHttpMethod(),
            resourcePath: field.contextResourcePath(),
            path: field.contextPath(),
            status: field.contextStatus(),
            responseLength: field.contextResponseLength(),
            responseLatency: field.contextResponseLatency(),
            integrationStatus: field.contextIntegrationStatus(),
            integrationLatency: field.contextIntegrationLatency(),
            authorizerStatus: field.contextAuthorizerStatus(),
            authorizerError: field.contextAuthorizerError(),
            errorMessage: field.contextErrorMessage(),
            errorType: field.contextErrorResponseType(),
            xrayTraceId: field.contextXrayTraceId(),
          }),
        ),
      },
    });

    const authorizer = new apigateway.TokenAuthorizer(this, "CoreApiAuthorizer", {
      authorizerName: `${settings.appName}-token`,
      handler: this.authorizerFunction.function,
      identitySource: apigateway.IdentitySource.header("Authorization"),
      resultsCacheTtl: Duration.seconds(settings.authorizerCacheTtlSeconds),
    });
    const validator = api.addRequestValidator("CoreApiRequestValidator", {
      requestValidatorName: "parameters-and-body",
      validateRequestParameters: true,
      validateRequestBody: true,
    });

    // JSON errors everywhere; an unknown route is a 404, not API Gateway's 403 "Missing Authentication Token".
    const errorBody = { "application/json": '{"message":$context.error.messageString}' };
    api.addGatewayResponse("Default4xx", { type: apigateway.ResponseType.DEFAULT_4XX, templates: errorBody });
    api.addGatewayResponse("Default5xx", { type: apigateway.ResponseType.DEFAULT_5XX, templates: errorBody });
    // An authorizer that throws (its store stalled past the SDK's bounded retries) is a 503 the
    // caller may retry, as the handlers answer the same failure (docs/architecture.md).
    const unavailable = { "application/json": JSON.stringify({ message: SERVICE_UNAVAILABLE_MESSAGE }) };
    for (const [id, type] of [
      ["AuthorizerFailure", apigateway.ResponseType.AUTHORIZER_FAILURE],
      ["AuthorizerConfigurationError", apigateway.ResponseType.AUTHORIZER_CONFIGURATION_ERROR],
    ] as const) {
      api.addGatewayResponse(id, { type, statusCode: "503", templates: unavailable });
    }
    // A 401 says how the token is sent (the raw user token, without `Bearer`): the authorizer
    // cannot shape it per request, so the one message of the local runner too.
    api.addGatewayResponse("Unauthorized", {
      type: apigateway.ResponseType.UNAUTHORIZED,
      statusCode: "401",
      templates: { "application/json": JSON.stringify({ message: UNAUTHORIZED_MESSAGE }) },
    });
    api.addGatewayResponse("RouteNotFound", {
      type: apigateway.ResponseType.MISSING_AUTHENTICATION_TOKEN,
      statusCode: "404",
      templates: { "application/json": '{"message":"Route not found"}' },
    });

    const integrations = new Map<FunctionGroupName, apigateway.LambdaIntegration>();
    const integrationFor = (group: FunctionGroupName) => {
      let integration = integrations.get(group);
      if (!integration) {
        // Proxy integration; the Lambda permission of each method names that method's ARN only.
        integration = new apigateway.LambdaIntegration(this.groupFunctions[group].function, {
          proxy: true,
          allowTestInvoke: false,
        });
        integrations.set(group, integration);
      }
      return integration;
    };

    for (const route of CORE_API_ROUTES) {
      const resource = api.root.resourceForPath(route.path);
      const pathParameters = [...route.path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]);
      const method = resource.addMethod(route.method, integrationFor(route.group), {
        ...(route.public
          ? { authorizationType: apigateway.AuthorizationType.NONE }
          : { authorizationType: apigateway.AuthorizationType.CUSTOM, authorizer }),
        requestValidator: validator,
        requestParameters: pathParameters.length
          ? Object.fromEntries(pathParameters.map((name) => [`method.request.path.${name}`, true]))
          : undefined,
      });
      if (route.public) {
        for (const id of ["AwsSolutions-APIG4", "AwsSolutions-COG4"]) {
          Validations.of(method).acknowledge({ id, reason: publicRouteReason(route) });
        }
      }
    }

    Validations.of(api).acknowledge({
      id: "AwsSolutions-COG4",
      reason:
        "The Core API authenticates users with a Lambda TOKEN authorizer (the gateway's own user tokens, cached by API Gateway), by design; there is no Cognito user pool.",
    });
    Validations.of(api.deploymentStage).acknowledge({
      id: "AwsSolutions-APIG3",
      reason:
        "Whether to put AWS WAF in front of the API (and which rules, at which cost) is the deployer's choice; stage throttling and the authorizer protect it by default. See cdk/README.md.",
    });
    Validations.of(api.deploymentStage).acknowledge({
      id: "AwsSolutions-APIG6",
      reason:
        "Execution logging needs the account-wide API Gateway CloudWatch role (one per account and region, shared by every API), which this app deliberately does not manage (@aws-cdk/aws-apigateway:disableCloudWatchRole). Every request is recorded in the JSON access log (APIG1) and traced with X-Ray.",
    });
    return api;
  }
}
