/**
 * The web console's deployment (issue 22): private bucket behind CloudFront with origin access
 * control, the API's paths routed to the REST API and the MCP function URL, the SPA rewrite, the
 * security headers, and the home template free of dependency cycles (the distribution references
 * the API, whose body references the functions).
 */
import { mkdirSync, mkdtempSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  API_PATH_PATTERNS,
  CONSOLE_CSP,
  FORWARDED_HOST_CODE,
  MCP_PATH_PATTERNS,
  SPA_REWRITE_CODE,
} from "../../cdk/constructs/console-site.ts";
import { ACCOUNT, buildTestApp, CDK_CONTEXT, flat, logicalId, Template } from "./helpers.ts";

type Json = Parameters<typeof flat>[0];
// No console/dist: the placeholder page is deployed (the default when the console is not built).
const emptyDist = mkdtempSync(join(tmpdir(), "console-dist-none-"));
const built = buildTestApp({}, { account: ACCOUNT, consoleDistDir: emptyDist });
const home = built.homeStack;
const site = home.console;
const template = Template.fromStack(home);
const resources = template.toJSON().Resources as Record<
  string,
  { Type: string; Properties?: Record<string, Json>; DependsOn?: string | string[] }
>;

const distributionId = logicalId(site.distribution);
const distributionConfig = template.findResources("AWS::CloudFront::Distribution")[distributionId]?.Properties
  .DistributionConfig as {
  Origins: {
    Id: string;
    DomainName: Json;
    OriginPath?: string;
    OriginAccessControlId?: Json;
    S3OriginConfig?: Json;
    CustomOriginConfig?: Json;
  }[];
  DefaultCacheBehavior: Record<string, Json>;
  CacheBehaviors: (Record<string, Json> & { PathPattern: string; TargetOriginId: string })[];
  DefaultRootObject: string;
  CustomErrorResponses?: Json;
  Logging?: { Bucket: Json; Prefix?: string };
};
const originOf = (id: string) => distributionConfig.Origins.find((origin) => origin.Id === id);

/** CachePolicy.CACHING_DISABLED and OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER (AWS managed ids). */
const CACHING_DISABLED = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad";
const ALL_VIEWER_EXCEPT_HOST_HEADER = "b689b0a8-53d0-40ab-baf2-68738e2966ac";

describe("ConsoleSite", () => {
  it("keeps the console in a private, encrypted, SSL-only bucket without website hosting", () => {
    const bucket = resources[logicalId(site.bucket)]?.Properties as Record<string, Json>;
    expect(bucket.PublicAccessBlockConfiguration).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    expect(flat(bucket.BucketEncryption)).toContain("AES256");
    expect(bucket.WebsiteConfiguration).toBeUndefined();
    expect(flat((bucket.LoggingConfiguration as Record<string, Json>).DestinationBucketName)).toBe(
      `<${logicalId(site.logBucket)}>`,
    );
    const policy = Object.values(template.findResources("AWS::S3::BucketPolicy")).find(
      (p) => flat(p.Properties.Bucket) === `<${logicalId(site.bucket)}>`,
    );
    const statements = policy?.Properties.PolicyDocument.Statement as Record<string, Json>[];
    expect(
      statements.some(
        (s) => s.Effect === "Deny" && flat(s.Condition).includes('"aws:SecureTransport":"false"'),
      ),
    ).toBe(true);
    // Read by CloudFront only, on behalf of this distribution only.
    const cloudfront = statements.filter((s) => flat(s.Principal).includes("cloudfront.amazonaws.com"));
    expect(cloudfront).toHaveLength(1);
    expect(cloudfront[0]?.Effect).toBe("Allow");
    expect(cloudfront[0]?.Action).toBe("s3:GetObject");
    const condition = (cloudfront[0]?.Condition as { StringEquals: Record<string, Json> } | undefined)
      ?.StringEquals;
    expect(condition).toBeDefined();
    expect(flat(condition?.["AWS:SourceArn"])).toBe(
      `arn:<AWS::Partition>:cloudfront::<AWS::AccountId>:distribution/<${distributionId}>`,
    );
    expect(statements.every((s) => flat(s.Principal) !== "*" || s.Effect === "Deny")).toBe(true);
  });

  it("serves the bucket through origin access control (sigv4, always), index.html at /", () => {
    const s3Origin = originOf(String(distributionConfig.DefaultCacheBehavior.TargetOriginId));
    expect(flat(s3Origin?.DomainName)).toBe(`<${logicalId(site.bucket)}.RegionalDomainName>`);
    expect(s3Origin?.S3OriginConfig).toEqual({ OriginAccessIdentity: "" });
    const oacId = flat(s3Origin?.OriginAccessControlId).replace(/^<|\.Id>$/g, "");
    const oac = resources[oacId]?.Properties?.OriginAccessControlConfig as Record<string, Json>;
    expect(oac).toMatchObject({
      OriginAccessControlOriginType: "s3",
      SigningBehavior: "always",
      SigningProtocol: "sigv4",
    });
    expect(distributionConfig.DefaultRootObject).toBe("index.html");
    // No error-response fallback: it would turn the API's own 403/404 into index.html.
    expect(distributionConfig.CustomErrorResponses).toBeUndefined();
    expect(distributionConfig.DefaultCacheBehavior.ViewerProtocolPolicy).toBe("redirect-to-https");
  });

  it("rewrites console routes to /index.html in a viewer-request function of the default behaviour", () => {
    const associations = distributionConfig.DefaultCacheBehavior.FunctionAssociations as Record<
      string,
      Json
    >[];
    expect(associations).toHaveLength(1);
    expect(associations[0]?.EventType).toBe("viewer-request");
    expect(flat(associations[0]?.FunctionARN)).toBe(`<${logicalId(site.spaRewrite)}.FunctionARN>`);
    const fn = resources[logicalId(site.spaRewrite)]?.Properties as Record<string, Json>;
    expect(fn.FunctionCode).toBe(SPA_REWRITE_CODE);
    // The code itself: routes become /index.html, files stay.
    const handler = new Function(`${SPA_REWRITE_CODE}; return handler;`)() as (event: {
      request: { uri: string };
    }) => { uri: string };
    const rewrite = (uri: string) => handler({ request: { uri } }).uri;
    expect(rewrite("/")).toBe("/index.html");
    expect(rewrite("/settings/keys")).toBe("/index.html");
    expect(rewrite("/invites/inv_123")).toBe("/index.html");
    expect(rewrite("/reset-password")).toBe("/index.html");
    expect(rewrite("/assets/index-3f2a.js")).toBe("/assets/index-3f2a.js");
    expect(rewrite("/favicon.ico")).toBe("/favicon.ico");
    expect(rewrite("/index.html")).toBe("/index.html");
  });

  it("forwards the viewer's Host as X-Forwarded-Host in the MCP behaviours' viewer-request function", () => {
    const fn = resources[logicalId(site.forwardedHost)]?.Properties as Record<string, Json>;
    expect(fn.FunctionCode).toBe(FORWARDED_HOST_CODE);
    const handler = new Function(`${FORWARDED_HOST_CODE}; return handler;`)() as (event: {
      request: { headers: Record<string, { value: string }> };
    }) => { headers: Record<string, { value: string }> };
    const headers = handler({ request: { headers: { host: { value: "d111.cloudfront.net" } } } }).headers;
    expect(headers["x-forwarded-host"]).toEqual({ value: "d111.cloudfront.net" });
    expect(headers.host).toEqual({ value: "d111.cloudfront.net" });
  });

  it("routes every API path to the REST API's stage v1 and every MCP path to the function URL, uncached", () => {
    const patterns = distributionConfig.CacheBehaviors.map((b) => b.PathPattern);
    expect(patterns.sort()).toEqual([...API_PATH_PATTERNS, ...MCP_PATH_PATTERNS].sort());
    expect(patterns).toEqual(
      expect.arrayContaining(["/api/*", "/auth/*", "/openapi.json", "/docs*", "/webhooks/*"]),
    );
    expect(patterns).toEqual(expect.arrayContaining(["/mcp*", "/.well-known/*", "/oauth/*"]));
    const apiId = logicalId(home.api);
    const mcpUrlId = logicalId(home.mcp.url);
    for (const behavior of distributionConfig.CacheBehaviors) {
      const origin = originOf(behavior.TargetOriginId);
      const isApi = (API_PATH_PATTERNS as readonly string[]).includes(behavior.PathPattern);
      if (isApi) {
        // The host of the stage's URL: https://<api id>.execute-api.<region>.<suffix>/v1/ split on "/".
        expect(JSON.stringify(origin?.DomainName), behavior.PathPattern).toContain(
          `{"Fn::Select":[2,{"Fn::Split":["/",{"Fn::Join":["",["https://",{"Ref":"${apiId}"},".execute-api.`,
        );
        // "/" + the 4th segment of the stage's URL: its stage name, v1.
        expect(JSON.stringify(origin?.OriginPath), behavior.PathPattern).toContain(
          `{"Fn::Select":[3,{"Fn::Split":["/",{"Fn::Join":["",["https://",{"Ref":"${apiId}"}`,
        );
        expect(JSON.stringify(origin?.OriginPath), behavior.PathPattern).toContain(
          `{"Ref":"${logicalId(home.api.deploymentStage)}"},"/"]]}]}]}`,
        );
        expect(resources[logicalId(home.api.deploymentStage)]?.Properties?.StageName).toBe("v1");
      } else {
        // The host of the function URL: https://<id>.lambda-url.<region>.on.aws/ split on "/".
        expect(JSON.stringify(origin?.DomainName), behavior.PathPattern).toBe(
          `{"Fn::Select":[2,{"Fn::Split":["/",{"Fn::GetAtt":["${mcpUrlId}","FunctionUrl"]}]}]}`,
        );
        expect(origin?.OriginPath ?? "", behavior.PathPattern).toBe("");
      }
      expect(origin?.OriginAccessControlId, behavior.PathPattern).toBeUndefined();
      expect(flat(origin?.CustomOriginConfig), behavior.PathPattern).toContain(
        '"OriginProtocolPolicy":"https-only"',
      );
      expect(behavior.AllowedMethods, behavior.PathPattern).toEqual([
        "GET",
        "HEAD",
        "OPTIONS",
        "PUT",
        "PATCH",
        "POST",
        "DELETE",
      ]);
      expect(behavior.CachePolicyId, behavior.PathPattern).toBe(CACHING_DISABLED);
      expect(behavior.OriginRequestPolicyId, behavior.PathPattern).toBe(ALL_VIEWER_EXCEPT_HOST_HEADER);
      // The console's CSP and SPA rewrite are not applied to the API's answers (/docs has its own page).
      expect(behavior.ResponseHeadersPolicyId, behavior.PathPattern).toBeUndefined();
      // The MCP paths pass the viewer's Host on as X-Forwarded-Host (the endpoint's public origin).
      if (isApi) expect(behavior.FunctionAssociations, behavior.PathPattern).toBeUndefined();
      else
        expect(flat(behavior.FunctionAssociations), behavior.PathPattern).toBe(
          `{"EventType":"viewer-request","FunctionARN":{"Fn::GetAtt":["${logicalId(site.forwardedHost)}","FunctionARN"]}}`,
        );
      expect(behavior.ViewerProtocolPolicy, behavior.PathPattern).toBe("redirect-to-https");
    }
  });

  it("sends the security headers with the console's responses", () => {
    expect(flat(distributionConfig.DefaultCacheBehavior.ResponseHeadersPolicyId)).toBe(
      `<${logicalId(site.securityHeaders)}>`,
    );
    const config = resources[logicalId(site.securityHeaders)]?.Properties?.ResponseHeadersPolicyConfig as {
      SecurityHeadersConfig: Record<string, Record<string, Json>>;
    };
    const headers = config.SecurityHeadersConfig;
    expect(CONSOLE_CSP).toBe(
      "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'",
    );
    expect(headers.ContentSecurityPolicy).toEqual({ ContentSecurityPolicy: CONSOLE_CSP, Override: true });
    expect(String(headers.ContentSecurityPolicy?.ContentSecurityPolicy)).not.toContain("unsafe-inline");
    expect(headers.StrictTransportSecurity).toEqual({
      AccessControlMaxAgeSec: 63072000,
      IncludeSubdomains: true,
      Override: true,
    });
    expect(headers.ContentTypeOptions).toEqual({ Override: true });
    expect(headers.FrameOptions).toEqual({ FrameOption: "DENY", Override: true });
    expect(headers.ReferrerPolicy).toEqual({
      ReferrerPolicy: "strict-origin-when-cross-origin",
      Override: true,
    });
  });

  it("logs the distribution's requests to the private log bucket", () => {
    expect(flat(distributionConfig.Logging?.Bucket)).toBe(
      `<${logicalId(site.logBucket)}.RegionalDomainName>`,
    );
    const logBucket = resources[logicalId(site.logBucket)]?.Properties as Record<string, Json>;
    expect(flat(logBucket.PublicAccessBlockConfiguration)).toBe(
      flat({
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      }),
    );
    expect(flat(logBucket.LifecycleConfiguration)).toContain('"ExpirationInDays":90');
  });

  it("outputs the console's URL", () => {
    expect(flat(template.toJSON().Outputs.ConsoleUrl.Value)).toBe(`https://<${distributionId}.DomainName>`);
  });

  it("without appUrl: the distribution's URL goes into a parameter every linking function may read (see cdk/README.md)", () => {
    const parameterName = `/${CDK_CONTEXT.appName}/app-url`;
    const parameters = Object.entries(template.findResources("AWS::SSM::Parameter"));
    expect(parameters).toHaveLength(1);
    const [parameterId, parameter] = parameters[0] ?? [];
    expect(parameter?.Properties.Name).toBe(parameterName);
    expect(flat(parameter?.Properties.Value)).toBe(`https://<${distributionId}.DomainName>`);
    const functions = Object.entries(template.findResources("AWS::Lambda::Function")).filter(
      ([, fn]) => fn.Properties.Environment?.Variables?.TABLE_NAME,
    );
    expect(functions.length).toBeGreaterThan(5);
    const policies = Object.values(template.findResources("AWS::IAM::Policy"));
    const readers = new Set(
      policies
        .filter((policy) =>
          (policy.Properties.PolicyDocument.Statement as Array<{ Action: Json; Resource: Json }>).some(
            (statement) =>
              flat(statement.Action) === "ssm:GetParameter" &&
              new RegExp(`:ssm:.*:parameter${parameterName}$`).test(flat(statement.Resource)),
          ),
        )
        .flatMap((policy) => (policy.Properties.Roles as Json[]).map((role) => flat(role))),
    );
    for (const [id, fn] of functions) {
      expect(fn.Properties.Environment.Variables.APP_URL, id).toBeUndefined();
      expect(fn.Properties.Environment.Variables.APP_URL_PARAMETER, id).toBe(parameterName);
      const role = flat({ Ref: fn.Properties.Role["Fn::GetAtt"][0] });
      // The authorizer never links to the console (and never reads it): no grant.
      const links = !id.startsWith("Authorizer");
      expect(readers.has(role), `${id} may read the parameter`).toBe(links);
    }
    // Granted by a built ARN: nothing references the parameter, so no cycle comes back.
    expect(flat(template.toJSON()).includes(`<${parameterId}>`)).toBe(false);
  });

  it("with appUrl (a custom domain): every function gets it as APP_URL, and no parameter is made", () => {
    const custom = buildTestApp({ appUrl: "https://console.example.com" }).homeStack;
    const customTemplate = Template.fromStack(custom);
    expect(Object.keys(customTemplate.findResources("AWS::SSM::Parameter"))).toHaveLength(0);
    const functions = Object.values(customTemplate.findResources("AWS::Lambda::Function")).filter(
      (fn) => fn.Properties.Environment?.Variables?.TABLE_NAME,
    );
    for (const fn of functions) {
      expect(fn.Properties.Environment.Variables.APP_URL).toBe("https://console.example.com");
      expect(fn.Properties.Environment.Variables.APP_URL_PARAMETER).toBeUndefined();
    }
  });

  describe("upload of the console", () => {
    const deployments = (t: Template) =>
      Object.values(t.findResources("Custom::CDKBucketDeployment")).map(
        (d) => d.Properties as Record<string, Json>,
      );

    it("without console/dist: a placeholder index.html, no-cache, invalidated", () => {
      expect(site.builtConsoleDeployed).toBe(false);
      const all = deployments(template);
      expect(all).toHaveLength(1);
      expect(all[0]?.SystemMetadata).toEqual({ "cache-control": "no-cache" });
      expect(flat(all[0]?.DestinationBucketName)).toBe(`<${logicalId(site.bucket)}>`);
      expect(flat(all[0]?.DistributionId)).toBe(`<${distributionId}>`);
      expect(all[0]?.DistributionPaths).toEqual(["/", "/index.html"]);
      expect(all[0]?.Prune).toBe(false);
    });

    it("with console/dist: hashed assets cached for a year (immutable), the rest no-cache", () => {
      const dist = mkdtempSync(join(tmpdir(), "console-dist-"));
      mkdirSync(join(dist, "assets"));
      writeFileSync(join(dist, "index.html"), "<!doctype html><title>console</title>");
      writeFileSync(join(dist, "favicon.ico"), "icon");
      writeFileSync(join(dist, ".build-stamp"), "hash of the sources (local/console-build.ts)");
      writeFileSync(join(dist, "assets", "index-3f2a.js"), "export {};");
      const outdir = mkdtempSync(join(tmpdir(), "console-cdk-out-"));
      const withDist = buildTestApp({}, { account: ACCOUNT, consoleDistDir: dist, nag: false, outdir });
      expect(withDist.homeStack.console.builtConsoleDeployed).toBe(true);
      withDist.app.synth();
      // Each deployment's cache-control, and the files of the asset it uploads (staged in the assembly).
      const uploads = deployments(Template.fromStack(withDist.homeStack)).map((d) => {
        const key = flat(d.SourceObjectKeys);
        const staged = join(outdir, `asset.${key.replace(/\.zip$/, "")}`);
        return {
          cacheControl: (d.SystemMetadata as Record<string, string>)["cache-control"],
          files: (readdirSync(staged, { recursive: true }) as string[])
            .filter((file) => statSync(join(staged, file)).isFile())
            .sort(),
          prune: d.Prune,
        };
      });
      expect(uploads.sort((a, b) => String(a.cacheControl).localeCompare(String(b.cacheControl)))).toEqual([
        { cacheControl: "no-cache", files: ["favicon.ico", "index.html"], prune: false },
        {
          cacheControl: "public, max-age=31536000, immutable",
          files: [join("assets", "index-3f2a.js")],
          prune: false,
        },
      ]);
    });
  });

  it("leaves no dependency cycle in the home template (CloudFormation would refuse it)", () => {
    const ids = new Set(Object.keys(resources));
    const referenced = (value: unknown, into: Set<string>) => {
      if (Array.isArray(value)) for (const item of value) referenced(item, into);
      else if (value && typeof value === "object") {
        for (const [key, inner] of Object.entries(value)) {
          if (key === "Ref" && typeof inner === "string" && ids.has(inner)) into.add(inner);
          else if (key === "Fn::GetAtt" && Array.isArray(inner) && ids.has(String(inner[0])))
            into.add(String(inner[0]));
          else if (key === "Fn::Sub" && typeof [inner].flat()[0] === "string") {
            for (const match of String([inner].flat()[0]).matchAll(/\$\{([A-Za-z0-9]+)/g))
              if (ids.has(match[1] as string)) into.add(match[1] as string);
            referenced([inner].flat().slice(1), into);
          } else referenced(inner, into);
        }
      }
    };
    const edges = new Map<string, Set<string>>();
    for (const [id, resource] of Object.entries(resources)) {
      const into = new Set<string>();
      referenced(resource.Properties, into);
      for (const dependency of [resource.DependsOn ?? []].flat()) into.add(dependency);
      edges.set(id, into);
    }
    // Depth-first search for a back edge.
    const state = new Map<string, "open" | "done">();
    const cycles: string[] = [];
    const visit = (id: string, path: string[]) => {
      if (state.get(id) === "done") return;
      if (state.get(id) === "open") {
        cycles.push([...path.slice(path.indexOf(id)), id].join(" -> "));
        return;
      }
      state.set(id, "open");
      for (const next of edges.get(id) ?? []) visit(next, [...path, id]);
      state.set(id, "done");
    };
    for (const id of ids) visit(id, []);
    expect(cycles).toEqual([]);
    // The detector sees the distribution's dependency on the API and the function URL.
    expect(edges.get(distributionId)?.has(logicalId(home.api))).toBe(true);
  });
});
