/**
 * The control plane, deployed once in the home region: one Lambda per route group of the Core API
 * (lib/infra/api-manifest.ts), the Core API authorizer, the scheduled jobs, the SES sender identity
 * and the REST API, imported from an OpenAPI body generated from CORE_API_ROUTES
 * (constructs/core-api-definition.ts): its routes cost no CloudFormation resource.
 *
 * Tables are addressed by deterministic ARN (every region's table is named appName), so this stack
 * needs no cross-region reference to the RegionalStacks; it only deploys after them.
 *
 * The MCP endpoint (issue 13) lives here too: a function URL, not an API Gateway route (its
 * requests authenticate in the function, with a user token or an OAuth access token).
 *
 * The web console (issue 22, constructs/console-site.ts) is here as well: its CloudFront
 * distribution routes the API's paths to this stack's REST API and MCP function URL, so it lives
 * beside them (no cross-stack export to keep in step). The functions' APP_URL is the `appUrl`
 * context when set (a custom domain), else the distribution's URL through an SSM parameter
 * (shareConsoleUrl: the environment cannot hold it, functions -> distribution -> REST API ->
 * functions is a cycle CloudFormation refuses); see cdk/README.md.
 */

import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps, Validations } from "aws-cdk-lib";
import * as apigateway from "aws-cdk-lib/aws-apigateway";
import type * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as events from "aws-cdk-lib/aws-events";
import * as targets from "aws-cdk-lib/aws-events-targets";
import * as iam from "aws-cdk-lib/aws-iam";
import * as kms from "aws-cdk-lib/aws-kms";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as logs from "aws-cdk-lib/aws-logs";
import * as ses from "aws-cdk-lib/aws-ses";
import * as ssm from "aws-cdk-lib/aws-ssm";
import type { Construct } from "constructs";
import { CORE_API_ROUTES } from "#lib/api/routes.ts";
import {
  AUTHORIZER_FUNCTION,
  AUTHORIZER_UPDATES,
  FUNCTION_GROUPS,
  type FunctionGroup,
  type FunctionGroupName,
  MCP_FUNCTION,
  REQUEST_ACCOUNTING_KEY_PREFIXES,
  SCHEDULED_FUNCTIONS,
  type ScheduledFunction,
} from "#lib/infra/api-manifest.ts";
import {
  type AppSettings,
  appUrlParameterName,
  kmsKeyAliasOf,
  oauthSigningKeyAliasOf,
  stripePriceVariable,
  tableNameOf,
} from "../app-settings.ts";
import { ConsoleSite } from "../constructs/console-site.ts";
import { coreApiDefinition } from "../constructs/core-api-definition.ts";
import { GatewayFunction } from "../constructs/gateway-function.ts";

export interface HomeStackProps extends StackProps {
  readonly settings: AppSettings;
  /** Directory of the function entry points (tests use stubs); defaults to functions/. */
  readonly functionsDir?: string;
  /** The built web console; defaults to console/dist (a placeholder page is deployed without it). */
  readonly consoleDistDir?: string;
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
  readonly api: apigateway.SpecRestApi;
  readonly groupFunctions: Record<FunctionGroupName, GatewayFunction>;
  readonly authorizerFunction: GatewayFunction;
  readonly scheduledFunctions: Record<keyof typeof SCHEDULED_FUNCTIONS, GatewayFunction>;
  readonly emailIdentity: ses.EmailIdentity;
  /** The MCP endpoint (issue 13): its function, function URL, OAuth signing key and errors alarm. */
  readonly mcp: McpEndpoint;
  /** The web console (issue 22): its bucket and the CloudFront distribution in front of it and the API. */
  readonly console: ConsoleSite;

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
      // Every authenticated request updates its rate window and (once a minute) its token's last
      // use in the home table, also in a group that otherwise only reads it.
      if (group.tables === "home-read" || group.tables === "all-regions-read")
        fn.allowUpdatesUnder(homeTableArn, REQUEST_ACCOUNTING_KEY_PREFIXES);
      if (group.sendsEmail) fn.allowSendEmail(this.emailIdentity.emailIdentityArn);
      if (group.usesKms) fn.allowSecretKeys(settings.regions, kmsKeyAliasOf(settings));
      if (group.usesPayments && settings.stripeSecretArn) {
        fn.addEnvironment("STRIPE_SECRET_ARN", settings.stripeSecretArn).allowReadSecret(
          settings.stripeSecretArn,
        );
      }
      if (group.usesPayments)
        for (const [tier, price] of Object.entries(settings.stripePrices ?? {}))
          if (price) fn.addEnvironment(stripePriceVariable(tier), price);
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
    // The Stripe webhook's signing secret (docs/billing.md): read by the webhooks function only.
    if (settings.stripeWebhookSecretArn)
      this.groupFunctions.webhooks
        .addEnvironment("STRIPE_WEBHOOK_SECRET_ARN", settings.stripeWebhookSecretArn)
        .allowReadSecret(settings.stripeWebhookSecretArn);
    // The accounts policy (docs/accounts.md), read only by the auth function.
    this.groupFunctions.auth
      .addEnvironment("SIGN_UP_POLICY", settings.signUpPolicy)
      .addEnvironment("AUTH_REQUESTS_PER_IP_PER_MINUTE", String(settings.authRequestsPerIpPerMinute));
    if (settings.signUpAllowedDomains.length > 0)
      this.groupFunctions.auth.addEnvironment(
        "SIGN_UP_ALLOWED_DOMAINS",
        settings.signUpAllowedDomains.join(","),
      );

    this.authorizerFunction = new GatewayFunction(this, pascal(AUTHORIZER_FUNCTION.name), {
      name: AUTHORIZER_FUNCTION.name,
      settings,
      functionsDir,
      description: `${settings.appName} Core API authorizer (API token or session cookie)`,
      timeout: Duration.seconds(5),
    });
    bindTables(this.authorizerFunction, AUTHORIZER_FUNCTION.tables);
    // It reads, and records use: a token's last use (TOKEN#) and a session's idle expiry (under
    // USER#: a key condition cannot scope by sort key, so the attributes are fixed instead).
    this.authorizerFunction
      .allowUpdatesUnder(homeTableArn, AUTHORIZER_UPDATES.items)
      .allowAttributeUpdatesUnder(
        homeTableArn,
        AUTHORIZER_UPDATES.sessionTouch.prefixes,
        AUTHORIZER_UPDATES.sessionTouch.attributes,
      );

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

    this.console = new ConsoleSite(this, "Console", {
      appName: settings.appName,
      api: this.api,
      mcpUrl: this.mcp.url,
      distDir: props.consoleDistDir,
    });
    if (!settings.appUrl) this.shareConsoleUrl(settings);
  }

  /**
   * Without an `appUrl` setting, APP_URL is the distribution's URL. It cannot be in the functions'
   * environment (functions -> distribution -> REST API -> functions is a cycle), so it goes into an
   * SSM parameter, and the functions that link to the console get its name (APP_URL_PARAMETER, set
   * by commonEnvironment) and may read it (lib/app-url.ts reads it once per container). The grant
   * names the parameter by a built ARN, not by reference, which would bring the cycle back.
   */
  private shareConsoleUrl(settings: AppSettings): void {
    const parameterName = appUrlParameterName(settings);
    new ssm.StringParameter(this, "AppUrlParameter", {
      parameterName,
      stringValue: this.console.url,
      description: `${settings.appName}: the web console's URL (APP_URL of the functions)`,
    });
    const parameterArn = this.formatArn({
      service: "ssm",
      resource: "parameter",
      resourceName: parameterName.replace(/^\//, ""),
    });
    const readers = [
      ...Object.values(this.groupFunctions),
      ...Object.values(this.scheduledFunctions),
      this.mcp.function,
    ];
    for (const fn of readers) fn.allowReadParameter(parameterArn);
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
      .addEnvironment("MCP_ALLOWED_ORIGINS", settings.mcpAllowedOrigins.join(","))
      // The consent page's password attempts count on the /auth per-IP limit (docs/mcp-oauth.md).
      .addEnvironment("AUTH_REQUESTS_PER_IP_PER_MINUTE", String(settings.authRequestsPerIpPerMinute));

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

  /**
   * The Core API: a REST API imported from the OpenAPI body of cdk/constructs/core-api-definition.ts
   * (every route of CORE_API_ROUTES, its integration and the authorizer), in OVERWRITE mode (a route
   * removed from the registry leaves the API), stage v1 with tracing, throttling and JSON access
   * logs, and one invoke permission per function.
   */
  private buildApi(settings: AppSettings): apigateway.SpecRestApi {
    const accessLogs = new logs.LogGroup(this, "CoreApiAccessLogs", {
      retention: logs.RetentionDays.THREE_MONTHS,
    });
    const field = apigateway.AccessLogField;
    const restApiName = `${settings.appName}-core-api`;
    const description = `${settings.appName} Core API (account management)`;
    const invocationUri = (fn: lambda.IFunction) =>
      `arn:${this.partition}:apigateway:${this.region}:lambda:path/2015-03-31/functions/${fn.functionArn}/invocations`;
    const definition = coreApiDefinition({
      title: restApiName,
      description,
      routes: CORE_API_ROUTES,
      integrationUri: (group) => invocationUri(this.groupFunctions[group].function),
      authorizer: {
        name: `${settings.appName}-caller`,
        uri: invocationUri(this.authorizerFunction.function),
      },
    });
    const api = new apigateway.SpecRestApi(this, "CoreApi", {
      restApiName,
      description,
      apiDefinition: apigateway.ApiDefinition.fromInline(definition),
      // The body replaces the whole API at each update (the default for APIs created since 2021 is
      // merge, which would keep the methods of removed routes).
      mode: apigateway.RestApiMode.OVERWRITE,
      endpointTypes: [apigateway.EndpointType.REGIONAL],
      // An import (a Body) takes its endpoint type from this parameter; EndpointConfiguration alone
      // has been reported ignored on import (then the API would be edge-optimized).
      parameters: { endpointConfigurationTypes: "REGIONAL" },
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

    // The routes' functions may be invoked by this API's stage v1 only (any method and path of
    // it: which route reaches which function is the body's integrations, in this same template);
    // one permission per function instead of one per method.
    const principal = new iam.ServicePrincipal("apigateway.amazonaws.com");
    const invokedFrom = api.arnForExecuteApi("*", "/*", API_STAGE_NAME);
    for (const group of new Set(CORE_API_ROUTES.map((route) => route.group))) {
      this.groupFunctions[group].function.addPermission("CoreApiInvoke", {
        principal,
        sourceArn: invokedFrom,
      });
    }
    // The authorizer is invoked by this API's authorizers only (its id is assigned by the import).
    this.authorizerFunction.function.addPermission("CoreApiAuthorizerInvoke", {
      principal,
      sourceArn: this.formatArn({
        service: "execute-api",
        resource: api.restApiId,
        resourceName: "authorizers/*",
      }),
    });

    Validations.of(api).acknowledge({
      id: "AwsSolutions-APIG2",
      reason:
        "Request validation is declared in the OpenAPI body (x-amazon-apigateway-request-validators, parameters and body, the default of every method); cdk-nag only recognises a separate AWS::ApiGateway::RequestValidator, which the OVERWRITE import of the body would delete.",
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
