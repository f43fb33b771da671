/**
 * The web console, deployed (issue 22, "Deployed (CDK)"): a private S3 bucket behind a CloudFront
 * distribution with origin access control, and the API's paths routed through the same
 * distribution, so that the console and the API share one origin (cookies just work, no CORS).
 *
 * - Default behaviour: the bucket (OAC, no website hosting), with a viewer-request CloudFront
 *   Function that rewrites a console route (a path without a file extension) to /index.html, and
 *   the security headers policy (strict CSP without inline script, HSTS, nosniff, DENY, referrer).
 *   No 403/404 -> index.html error responses: those would also rewrite the API's own errors.
 * - The Core API's paths (API_PATH_PATTERNS) go to the REST API's stage v1, the MCP endpoint's
 *   (MCP_PATH_PATTERNS) to its function URL: all methods, caching disabled, every viewer header,
 *   cookie and query string forwarded except Host (the origin's own host is sent).
 * - The built console (console/dist, `npm run console:build`) is uploaded when it exists: hashed
 *   files under assets/ with a year's immutable cache, everything else (index.html) no-cache, and
 *   the distribution's cached index invalidated. Without a build, a placeholder index.html (built
 *   at synth, in the cloud assembly) is uploaded instead, so synth and the tests never need one.
 * - Access logs: the distribution's standard logs and the bucket's server access logs go to one
 *   private log bucket (90 days).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { CfnOutput, Duration, RemovalPolicy, Stack, Validations } from "aws-cdk-lib";
import type * as apigateway from "aws-cdk-lib/aws-apigateway";
import * as cloudfront from "aws-cdk-lib/aws-cloudfront";
import * as origins from "aws-cdk-lib/aws-cloudfront-origins";
import type * as iam from "aws-cdk-lib/aws-iam";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import * as s3 from "aws-cdk-lib/aws-s3";
import * as s3deploy from "aws-cdk-lib/aws-s3-deployment";
import { Construct } from "constructs";
import { wildcardResourceFinding } from "../nag.ts";
import { PROJECT_ROOT } from "./gateway-function.ts";

/** Paths served by the Core API (REST API stage v1), as the local runner serves them. */
export const API_PATH_PATTERNS = ["/api/*", "/auth/*", "/openapi.json", "/docs*", "/webhooks/*"] as const;
/** Paths served by the MCP function URL: the endpoint and its OAuth 2.1 authorization server. */
export const MCP_PATH_PATTERNS = ["/mcp*", "/.well-known/*", "/oauth/*"] as const;

/** The console's Content-Security-Policy: nothing inline, nothing from another origin. */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "object-src 'none'",
].join("; ");

/** HSTS max-age: two years. */
export const HSTS_MAX_AGE = Duration.days(730);

/** The built console (Vite's output); uploaded only when it exists. */
export const DEFAULT_CONSOLE_DIST = join(PROJECT_ROOT, "console", "dist");

/**
 * Viewer-request function of the default behaviour: a console route (no file extension in the
 * last segment, e.g. /settings/keys or /invites/abc) is served index.html; files (/assets/x.js,
 * /favicon.ico) are served as they are, and a missing one stays a 403 from S3.
 */
export const SPA_REWRITE_CODE = `function handler(event) {
  var request = event.request;
  var last = request.uri.substring(request.uri.lastIndexOf("/") + 1);
  if (last.indexOf(".") === -1) request.uri = "/index.html";
  return request;
}`;

/**
 * Viewer-request function of the MCP behaviours: the viewer's Host (the distribution's domain, or
 * its alias) as X-Forwarded-Host, which the origin request policy then forwards (Host itself must be
 * the function URL's). functions/mcp.ts takes it as its public origin only when it is APP_URL's host.
 */
export const FORWARDED_HOST_CODE = `function handler(event) {
  var request = event.request;
  if (request.headers.host) request.headers["x-forwarded-host"] = { value: request.headers.host.value };
  return request;
}`;

const PLACEHOLDER_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Console not built</title></head>
<body><h1>The console was not built</h1>
<p>Run <code>npm run console:build</code>, then <code>cdk deploy</code> again. The API is served under /api.</p>
</body></html>
`;

export interface ConsoleSiteProps {
  readonly appName: string;
  /** The Core API (its stage's URL gives the origin's domain and the origin path /v1). */
  readonly api: apigateway.RestApiBase;
  /** The MCP endpoint's function URL (auth NONE: the function authenticates every request). */
  readonly mcpUrl: lambda.IFunctionUrl;
  /** The built console; defaults to console/dist. When the folder is missing, a placeholder is deployed. */
  readonly distDir?: string;
}

export class ConsoleSite extends Construct {
  readonly bucket: s3.Bucket;
  readonly logBucket: s3.Bucket;
  readonly distribution: cloudfront.Distribution;
  readonly spaRewrite: cloudfront.Function;
  readonly forwardedHost: cloudfront.Function;
  readonly securityHeaders: cloudfront.ResponseHeadersPolicy;
  /** `https://<distribution domain>`, without a trailing slash. */
  readonly url: string;
  /** Whether console/dist was found at synth (else the placeholder page is deployed). */
  readonly builtConsoleDeployed: boolean;

  constructor(scope: Construct, id: string, props: ConsoleSiteProps) {
    super(scope, id);
    const { appName, api, mcpUrl } = props;

    this.logBucket = new s3.Bucket(this, "AccessLogs", {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      // CloudFront standard logging writes with an ACL (the awslogsdelivery account's grant).
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
      lifecycleRules: [{ expiration: Duration.days(90) }],
      // Its own accesses are not logged (cdk-nag S1 does not ask it of a log destination).
      removalPolicy: RemovalPolicy.RETAIN,
    });

    this.bucket = new s3.Bucket(this, "Bucket", {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      serverAccessLogsBucket: this.logBucket,
      serverAccessLogsPrefix: "s3/",
      // Only built files, all redeployable from the repository.
      removalPolicy: RemovalPolicy.DESTROY,
      autoDeleteObjects: false,
    });

    this.spaRewrite = new cloudfront.Function(this, "SpaRewrite", {
      comment: `${appName}: console routes (no file extension) -> /index.html`,
      runtime: cloudfront.FunctionRuntime.JS_2_0,
      code: cloudfront.FunctionCode.fromInline(SPA_REWRITE_CODE),
    });
    this.forwardedHost = new cloudfront.Function(this, "ForwardedHost", {
      comment: `${appName}: the viewer's Host as X-Forwarded-Host, for the MCP endpoint's public origin`,
      runtime: cloudfront.FunctionRuntime.JS_2_0,
      code: cloudfront.FunctionCode.fromInline(FORWARDED_HOST_CODE),
    });

    this.securityHeaders = new cloudfront.ResponseHeadersPolicy(this, "SecurityHeaders", {
      comment: `${appName}: the console's security headers`,
      securityHeadersBehavior: {
        contentSecurityPolicy: { contentSecurityPolicy: CONSOLE_CSP, override: true },
        strictTransportSecurity: {
          accessControlMaxAge: HSTS_MAX_AGE,
          includeSubdomains: true,
          override: true,
        },
        contentTypeOptions: { override: true },
        frameOptions: { frameOption: cloudfront.HeadersFrameOption.DENY, override: true },
        referrerPolicy: {
          referrerPolicy: cloudfront.HeadersReferrerPolicy.STRICT_ORIGIN_WHEN_CROSS_ORIGIN,
          override: true,
        },
      },
    });

    // The API's paths: never cached, every method, cookies, query strings and headers forwarded
    // (Host excepted: API Gateway and function URLs route by their own host name).
    const passThrough = (origin: cloudfront.IOrigin): cloudfront.BehaviorOptions => ({
      origin,
      viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
      allowedMethods: cloudfront.AllowedMethods.ALLOW_ALL,
      cachePolicy: cloudfront.CachePolicy.CACHING_DISABLED,
      originRequestPolicy: cloudfront.OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
      compress: true,
    });
    const apiBehavior = passThrough(new origins.RestApiOrigin(api));
    // A plain function URL origin: OAC for function URLs needs the URL's auth type AWS_IAM, and
    // then every POST body must be signed by the viewer (x-amz-content-sha256), which MCP clients
    // do not send. The URL stays public (auth NONE) and the function authenticates each request.
    const mcpBehavior: cloudfront.BehaviorOptions = {
      ...passThrough(new origins.FunctionUrlOrigin(mcpUrl)),
      functionAssociations: [
        { function: this.forwardedHost, eventType: cloudfront.FunctionEventType.VIEWER_REQUEST },
      ],
    };

    this.distribution = new cloudfront.Distribution(this, "Distribution", {
      comment: `${appName} web console and API`,
      defaultRootObject: "index.html",
      httpVersion: cloudfront.HttpVersion.HTTP2_AND_3,
      priceClass: cloudfront.PriceClass.PRICE_CLASS_100,
      enableLogging: true,
      logBucket: this.logBucket,
      logFilePrefix: "cloudfront/",
      defaultBehavior: {
        origin: origins.S3BucketOrigin.withOriginAccessControl(this.bucket),
        viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        allowedMethods: cloudfront.AllowedMethods.ALLOW_GET_HEAD_OPTIONS,
        cachePolicy: cloudfront.CachePolicy.CACHING_OPTIMIZED,
        responseHeadersPolicy: this.securityHeaders,
        compress: true,
        functionAssociations: [
          { function: this.spaRewrite, eventType: cloudfront.FunctionEventType.VIEWER_REQUEST },
        ],
      },
      additionalBehaviors: Object.fromEntries([
        ...API_PATH_PATTERNS.map((pattern) => [pattern, apiBehavior] as const),
        ...MCP_PATH_PATTERNS.map((pattern) => [pattern, mcpBehavior] as const),
      ]),
    });
    Validations.of(this.distribution).acknowledge({
      id: "AwsSolutions-CFR1",
      reason:
        "The console and the API serve customers wherever they are; a geo restriction is a deployer's business decision (see cdk/README.md), not a default of the app.",
    });
    Validations.of(this.distribution).acknowledge({
      id: "AwsSolutions-CFR2",
      reason:
        "Whether to put AWS WAF in front of the distribution (and which rules, at which cost) is the deployer's choice, as for the API stage (APIG3); the API behind it keeps its throttling and authorizer. See cdk/README.md.",
    });
    Validations.of(this.distribution).acknowledge({
      id: "AwsSolutions-CFR4",
      reason:
        "The distribution uses CloudFront's default *.cloudfront.net certificate (no custom domain configured), with which CloudFront cannot enforce a minimum TLS version; viewers are redirected to HTTPS.",
    });

    this.url = `https://${this.distribution.distributionDomainName}`;

    const distDir = props.distDir ?? DEFAULT_CONSOLE_DIST;
    this.builtConsoleDeployed = existsSync(join(distDir, "index.html"));
    if (this.builtConsoleDeployed) {
      // Content-hashed files: cached for a year, never revalidated.
      new s3deploy.BucketDeployment(this, "DeployAssets", {
        sources: [s3deploy.Source.asset(distDir, { exclude: ["*", "!assets", "!assets/**", ".*", "**/.*"] })],
        destinationBucket: this.bucket,
        cacheControl: [
          s3deploy.CacheControl.setPublic(),
          s3deploy.CacheControl.maxAge(Duration.days(365)),
          s3deploy.CacheControl.immutable(),
        ],
        // Old hashed files stay for clients still running the previous index.html.
        prune: false,
      });
    }
    // index.html (and any other unhashed file): revalidated at every load, and invalidated.
    const deployIndex = new s3deploy.BucketDeployment(this, "DeployIndex", {
      sources: [
        this.builtConsoleDeployed
          ? // Not assets/, nor dot files (local/console-build.ts's .build-stamp).
            s3deploy.Source.asset(distDir, { exclude: ["assets", "assets/**", ".*", "**/.*"] })
          : s3deploy.Source.data("index.html", PLACEHOLDER_HTML),
      ],
      destinationBucket: this.bucket,
      cacheControl: [s3deploy.CacheControl.noCache()],
      prune: false,
      distribution: this.distribution,
      distributionPaths: ["/", "/index.html"],
    });

    this.acknowledgeDeploymentHandler(deployIndex);

    new CfnOutput(this, "Url", {
      description: "URL of the web console (and of the API through the same origin)",
      value: this.url,
    }).overrideLogicalId("ConsoleUrl");
  }

  /**
   * The BucketDeployment handler is CDK's own singleton (a Lambda function and its role, shared by
   * both deployments): its managed policy, its runtime and the wildcards of the grants CDK writes
   * for it (read the asset bucket, write the console bucket, invalidate the distribution) are
   * acknowledged on it, each finding by its exact id, read from the role's policy.
   */
  private acknowledgeDeploymentHandler(deployment: s3deploy.BucketDeployment): void {
    const stack = Stack.of(this);
    const role = deployment.handlerRole;
    const handler = stack.node.children.find((child) =>
      child.node.id.startsWith("Custom::CDKBucketDeployment"),
    );
    if (!handler) throw new Error("the BucketDeployment handler was not found in the stack");
    Validations.of(handler).acknowledge({
      id: "AwsSolutions-L1",
      reason:
        "The BucketDeployment handler is aws-cdk-lib's own function (Python, with the AWS CLI layer); its runtime is the one aws-cdk-lib pins, updated with aws-cdk-lib.",
    });
    Validations.of(role).acknowledge({
      id: "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
      reason:
        "The BucketDeployment handler's role (aws-cdk-lib's) uses the AWS managed basic execution policy: it only lets the handler write its own CloudWatch logs.",
    });
    const policy = role.node.tryFindChild("DefaultPolicy") as iam.Policy | undefined;
    if (!policy) throw new Error("the BucketDeployment handler's role has no policy");
    const document = stack.resolve(policy.document.toJSON()) as {
      Statement: { Action: string | string[]; Resource: unknown }[];
    };
    const ids = new Set<string>();
    for (const statement of document.Statement) {
      for (const action of [statement.Action].flat()) {
        if (action.includes("*")) ids.add(`AwsSolutions-IAM5[Action::${action}]`);
      }
      for (const resource of [statement.Resource].flat()) {
        const finding = wildcardResourceFinding(this, resource as string);
        if (finding.includes("*")) ids.add(finding);
      }
    }
    for (const id of ids) {
      Validations.of(role).acknowledge({
        id,
        reason:
          "The BucketDeployment handler (aws-cdk-lib's) copies the console's build: it reads the CDK asset bucket's objects, writes and deletes the console bucket's objects, and invalidates the distribution (CloudFront invalidations have no resource-level scope); CDK writes these grants.",
      });
    }
  }
}
