/**
 * Runtime configuration, read from the environment once per process (cold start) and validated,
 * so a missing variable fails loudly at start instead of deep inside a request.
 */
import * as z from "zod/mini";

export const csv = z.pipe(
  z.pipe(
    z.string(),
    z.transform((value) =>
      value
        .split(",")
        .map((part) => part.trim())
        .filter(Boolean),
    ),
  ),
  z.array(z.string().check(z.minLength(1))).check(z.minLength(1)),
);

const jsonRecord = z.pipe(
  z.pipe(
    z.string(),
    z.transform((value, ctx) => {
      try {
        return JSON.parse(value) as unknown;
      } catch {
        ctx.issues.push({ code: "custom", message: "must be JSON", input: value });
        return z.NEVER;
      }
    }),
  ),
  z.record(z.string(), z.string()),
);

const EnvSchema = z.object({
  TABLE_NAME: z.string().check(z.minLength(3)),
  HOME_REGION: z._default(z.string().check(z.minLength(1)), "us-east-1"),
  REGIONS: z._default(csv, ["us-east-1", "eu-west-1"]),
  KMS_KEY_ALIAS: z._default(z.string().check(z.startsWith("alias/")), "alias/proxy-gateway"),
  EMAIL_SENDER: z._default(z.email(), "no-reply@example.com"),
  /** Unset: `http://localhost:<PORT>` (the local Core API; the local runner sets its real port). */
  APP_URL: z.optional(z.url()),
  PORT: z._default(z.coerce.number().check(z.int(), z.minimum(0), z.maximum(65535)), 3000),
  DATA_PLANE_URLS: z.optional(jsonRecord),
  STRIPE_SECRET_KEY: z.optional(z.string().check(z.minLength(1))),
  /** In AWS the key lives in Secrets Manager; the function reads it once at cold start. */
  STRIPE_SECRET_ARN: z.optional(z.string().check(z.minLength(1))),
  STRIPE_API_BASE: z.optional(z.url()),
  CLIENT_DELETION_GRACE_DAYS: z._default(z.coerce.number().check(z.int(), z.minimum(0), z.maximum(365)), 30),
  /**
   * The asymmetric KMS key (ECC_NIST_P256, SIGN_VERIFY) that signs the MCP endpoint's OAuth access
   * tokens (docs/mcp-oauth.md): a key id, key ARN or alias. Default: `<KMS_KEY_ALIAS>-oauth-signing`,
   * the alias the local runner provisions in the emulator.
   */
  OAUTH_SIGNING_KEY_ID: z.optional(z.string().check(z.minLength(1))),
});

export interface AppConfig {
  tableName: string;
  homeRegion: string;
  regions: string[];
  kmsKeyAlias: string;
  emailSender: string;
  /** Base URL of the web application; invite e-mails link to `${appUrl}/invites/{inviteId}`. */
  appUrl: string;
  /** Data-plane base URL of each region (`{region_base_url}`), when known. */
  dataPlaneUrls: Record<string, string>;
  stripe: { secretKey?: string; secretArn?: string; apiBase?: string };
  clientDeletionGraceDays: number;
  /** The KMS key that signs OAuth access tokens (id, ARN or alias), in the home region. */
  oauthSigningKeyId: string;
}

/** The signing key's alias when OAUTH_SIGNING_KEY_ID is not set (local/provision.ts creates it). */
export const oauthSigningKeyAlias = (kmsKeyAlias: string) => `${kmsKeyAlias}-oauth-signing`;

let cached: AppConfig | undefined;

export function getConfig(): AppConfig {
  if (cached) return cached;
  const parsed = EnvSchema.safeParse(process.env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
    throw new Error(`Invalid configuration: ${problems}`);
  }
  const env = parsed.data;
  if (!env.REGIONS.includes(env.HOME_REGION)) {
    throw new Error(`Invalid configuration: HOME_REGION ${env.HOME_REGION} is not in REGIONS`);
  }
  cached = {
    tableName: env.TABLE_NAME,
    homeRegion: env.HOME_REGION,
    regions: env.REGIONS,
    kmsKeyAlias: env.KMS_KEY_ALIAS,
    emailSender: env.EMAIL_SENDER,
    appUrl: (env.APP_URL ?? `http://localhost:${env.PORT}`).replace(/\/$/, ""),
    dataPlaneUrls: env.DATA_PLANE_URLS ?? {},
    stripe: {
      secretKey: env.STRIPE_SECRET_KEY,
      secretArn: env.STRIPE_SECRET_ARN,
      apiBase: env.STRIPE_API_BASE,
    },
    clientDeletionGraceDays: env.CLIENT_DELETION_GRACE_DAYS,
    oauthSigningKeyId: env.OAUTH_SIGNING_KEY_ID ?? oauthSigningKeyAlias(env.KMS_KEY_ALIAS),
  };
  return cached;
}

/** Forget the cached configuration (the local runner and tests change the environment). */
export function resetConfig(): void {
  cached = undefined;
}
