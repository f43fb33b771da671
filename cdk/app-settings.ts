/**
 * The deployment settings of the CDK app, read once from the CDK context (cdk.json, or `-c key=value`
 * on the command line) and validated, so a typo fails `cdk synth` with a clear message instead of
 * producing a stack that breaks at run time.
 */
import type { Node } from "constructs";
import { z } from "zod";

const REGION = /^[a-z]{2}(-[a-z]+)+-\d$/;

/** appName names the table, the KMS alias and the stacks: it must be valid for all three. */
const appName = z
  .string()
  .regex(/^[A-Za-z][A-Za-z0-9-]{2,63}$/, "3-64 characters: a letter, then letters, digits or '-'");

/** `-c regions=us-east-1,eu-west-1` arrives as a string; cdk.json gives an array. */
const regionList = z
  .union([z.array(z.string()), z.string().transform((value) => value.split(","))])
  .transform((values) => [...new Set(values.map((value) => value.trim()).filter(Boolean))])
  .pipe(z.array(z.string().regex(REGION, "not an AWS region name")).min(1));

/** `-c dataPlaneUrls='{"eu-west-1":"https://..."}'` arrives as a string; cdk.json gives an object. */
const urlRecord = z
  .union([
    z.record(z.string(), z.string()),
    z.string().transform((value, ctx) => {
      try {
        return JSON.parse(value) as unknown;
      } catch {
        ctx.addIssue({ code: "custom", message: "must be a JSON object" });
        return z.NEVER;
      }
    }),
  ])
  .pipe(z.record(z.string().regex(REGION), z.url()));

/** The tiers a client can buy online (every tier but the free `basic`). */
const PAID_TIERS = [
  "team",
  "enterprise_basic",
  "enterprise_security",
  "enterprise_governance",
  "enterprise_custom",
] as const;

/**
 * `-c stripePrices='{"team":"price_..."}'` arrives as a string; cdk.json gives an object. The
 * processor's recurring price of each tier sold online (STRIPE_PRICE_<TIER>, docs/billing.md).
 */
const priceRecord = z
  .union([
    z.record(z.string(), z.string()),
    z.string().transform((value, ctx) => {
      try {
        return JSON.parse(value) as unknown;
      } catch {
        ctx.addIssue({ code: "custom", message: "must be a JSON object" });
        return z.NEVER;
      }
    }),
  ])
  .pipe(z.partialRecord(z.enum(PAID_TIERS), z.string().regex(/^price_\w+$/, "not a Stripe price id")));

/** The environment variable of a tier's price: `enterprise_basic` -> STRIPE_PRICE_ENTERPRISE_BASIC. */
export const stripePriceVariable = (tier: string): string => `STRIPE_PRICE_${tier.toUpperCase()}`;

/** `-c mcpDeleteEnabled=true` arrives as a string; cdk.json gives a boolean. */
const flag = z.union([z.boolean(), z.enum(["true", "false"]).transform((value) => value === "true")]);

/** An origin exactly as browsers send it: scheme, host and port, no path or trailing slash. */
const origin = z.string().refine((value) => URL.canParse(value) && new URL(value).origin === value, {
  message: "not an origin (scheme://host[:port], no path)",
});
/** `-c mcpAllowedOrigins=https://a.example,https://b.example` arrives as a string; cdk.json gives an array. */
const originList = z
  .union([z.array(z.string()), z.string().transform((value) => value.split(","))])
  .transform((values) => [...new Set(values.map((value) => value.trim()).filter(Boolean))])
  .pipe(z.array(origin).max(20));

/** `-c signUpAllowedDomains=example.com,example.org` arrives as a string; cdk.json gives an array. */
const domainList = z
  .union([z.array(z.string()), z.string().transform((value) => value.split(","))])
  .transform((values) => [...new Set(values.map((value) => value.trim().toLowerCase()).filter(Boolean))])
  .pipe(z.array(z.string().regex(/^[a-z0-9.-]+\.[a-z]{2,}$/, "not a domain name")).max(100));

const ContextSchema = z
  .object({
    appName,
    homeRegion: z.string().regex(REGION, "not an AWS region name"),
    regions: regionList,
    emailSender: z.email(),
    /**
     * The console's public URL when it is not the distribution's own (a custom domain). Unset: the
     * distribution's URL, given to the functions through an SSM parameter (appUrlParameterName).
     */
    appUrl: z.url().optional(),
    /** Full ARN (with its random suffix) of the Secrets Manager secret holding the Stripe key. */
    stripeSecretArn: z
      .string()
      .regex(
        /^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:.+$/,
        "not a Secrets Manager secret ARN",
      )
      .optional(),
    /** Recurring price id of each paid tier sold online (STRIPE_PRICE_<TIER> of the payment groups). */
    stripePrices: priceRecord.optional(),
    /**
     * Full ARN of the Secrets Manager secret holding the Stripe webhook endpoint's signing secret
     * (`whsec_...`): STRIPE_WEBHOOK_SECRET_ARN of the webhooks function, the only one that reads it.
     */
    stripeWebhookSecretArn: z
      .string()
      .regex(
        /^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:.+$/,
        "not a Secrets Manager secret ARN",
      )
      .optional(),
    /** Data-plane base URL of each region, once the data plane is deployed (DATA_PLANE_URLS). */
    dataPlaneUrls: urlRecord.optional(),
    /**
     * The MCP endpoint offers its delete tools (DELETE_ENABLED=true). Off by default: an agent
     * cannot delete anything unless the deployer opts in.
     */
    mcpDeleteEnabled: flag.default(false),
    /**
     * Browser origins allowed to call the MCP endpoint: MCP_ALLOWED_ORIGINS (comma list), which
     * the function checks the Origin header against (DNS rebinding), and the only origins its
     * function URL's CORS allows. Empty by default: no browser origin, no CORS.
     */
    mcpAllowedOrigins: originList.default([]),
    /**
     * CloudFront is in front of every region's data plane and sets `CloudFront-Viewer-Country`:
     * TRUST_CLOUDFRONT_VIEWER_COUNTRY of the telemetry consumers, which then take a request's
     * country from that header. Off by default: the data plane is a function URL that callers reach
     * directly, so the header is the caller's claim, and the country comes from GeoIP of the
     * caller's address (docs/telemetry.md).
     */
    trustCloudFrontViewerCountry: flag.default(false),
    /**
     * Who may open an account (SIGN_UP_POLICY of the auth function, docs/accounts.md): `open`
     * (default) or `invite-only` (addresses with a pending invite).
     */
    signUpPolicy: z.enum(["open", "invite-only"]).default("open"),
    /** E-mail domains sign-up is limited to (SIGN_UP_ALLOWED_DOMAINS); empty (default): any. */
    signUpAllowedDomains: domainList.default([]),
    /** Requests to `/auth/*` per source IP and minute (AUTH_REQUESTS_PER_IP_PER_MINUTE); default 300. */
    authRequestsPerIpPerMinute: z.coerce.number().int().min(1).max(1_000_000).default(300),
  })
  .superRefine((settings, ctx) => {
    if (!settings.regions.includes(settings.homeRegion)) {
      ctx.addIssue({ code: "custom", path: ["homeRegion"], message: "must be one of regions" });
    }
    const secretRegion = settings.stripeSecretArn?.split(":")[3];
    if (secretRegion && secretRegion !== settings.homeRegion) {
      // The payments code builds its Secrets Manager client for the function's own region.
      ctx.addIssue({
        code: "custom",
        path: ["stripeSecretArn"],
        message: "the secret must be in homeRegion",
      });
    }
    const webhookSecretRegion = settings.stripeWebhookSecretArn?.split(":")[3];
    if (webhookSecretRegion && webhookSecretRegion !== settings.homeRegion) {
      ctx.addIssue({
        code: "custom",
        path: ["stripeWebhookSecretArn"],
        message: "the secret must be in homeRegion",
      });
    }
  });

export type AppSettings = z.infer<typeof ContextSchema>;

export const CONTEXT_KEYS = [
  "appName",
  "homeRegion",
  "regions",
  "emailSender",
  "appUrl",
  "stripeSecretArn",
  "stripePrices",
  "stripeWebhookSecretArn",
  "dataPlaneUrls",
  "mcpDeleteEnabled",
  "mcpAllowedOrigins",
  "trustCloudFrontViewerCountry",
  "signUpPolicy",
  "signUpAllowedDomains",
  "authRequestsPerIpPerMinute",
] as const satisfies readonly (keyof AppSettings)[];

export function readAppSettings(node: Node): AppSettings {
  const raw = Object.fromEntries(CONTEXT_KEYS.map((key) => [key, node.tryGetContext(key) ?? undefined]));
  const parsed = ContextSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues
      .map((issue) => `${issue.path.join(".")}: ${issue.message}`)
      .join("; ");
    throw new Error(`Invalid CDK context (cdk.json or -c): ${problems}`);
  }
  return parsed.data;
}

/** Every region's table has the same physical name, so any region's table ARN can be built from it. */
export const tableNameOf = (settings: Pick<AppSettings, "appName">): string => settings.appName;

/** The alias of each region's KMS key (KMS_KEY_ALIAS); the same alias in every region. */
/** The SSM parameter holding the console's URL when `appUrl` is not set (lib/app-url.ts reads it). */
export const appUrlParameterName = (settings: Pick<AppSettings, "appName">): string =>
  `/${settings.appName}/app-url`;

export const kmsKeyAliasOf = (settings: Pick<AppSettings, "appName">): string => `alias/${settings.appName}`;

/** The alias of the MCP endpoint's OAuth signing key (home region only). */
export const oauthSigningKeyAliasOf = (settings: Pick<AppSettings, "appName">): string =>
  `alias/${settings.appName}-oauth-signing`;
