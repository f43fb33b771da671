/**
 * The settings of accounts (docs/accounts.md, "Settings"), apart from lib/config.ts: only the
 * account routes read them, and the data plane, which loads lib/config.ts at its cold start, is
 * not made to carry them. Read from the environment at each call (cheap; tests change it).
 */
import * as z from "zod/mini";
import { csv, getConfig } from "./config.ts";

const AccountEnvSchema = z.object({
  /** Who may open an account (docs/accounts.md): anyone, or only addresses with a pending invite. */
  SIGN_UP_POLICY: z._default(z.enum(["open", "invite-only"]), "open"),
  /** E-mail domains sign-up is limited to (comma-separated, e.g. `example.com,example.org`); unset: any. */
  SIGN_UP_ALLOWED_DOMAINS: z.optional(
    z.pipe(
      csv,
      z.array(
        z.pipe(
          z.string().check(z.regex(/^[A-Za-z0-9.-]+\.[A-Za-z]{2,}$/, "not a domain name")),
          z.transform((value) => value.toLowerCase()),
        ),
      ),
    ),
  ),
  /** Requests to `/auth/*` per source IP address and minute (429 with Retry-After beyond). */
  AUTH_REQUESTS_PER_IP_PER_MINUTE: z._default(
    z.coerce.number().check(z.int(), z.minimum(1), z.maximum(1_000_000)),
    300,
  ),
  /** Passkeys (docs/accounts.md, "Passkeys"): the relying party's id; default the hostname of APP_URL. */
  WEBAUTHN_RP_ID: z.optional(z.string().check(z.minLength(1))),
  /** The origin the browser reports in a passkey ceremony; default the origin of APP_URL. */
  WEBAUTHN_ORIGIN: z.optional(z.url()),
  /** The name an authenticator shows for the relying party. */
  WEBAUTHN_RP_NAME: z._default(z.string().check(z.minLength(1)), "API gateway"),
});

export interface AccountConfig {
  /** Sign-up policy: `open` or `invite-only`, and the allowed e-mail domains (empty: any). */
  signUp: { policy: "open" | "invite-only"; allowedDomains: string[] };
  /** Requests to `/auth/*` per source IP address and minute. */
  authRequestsPerIpPerMinute: number;
  /** The WebAuthn relying party of passkeys: its id (a host name), the expected origin and its name. */
  webauthn: { rpId: string; origin: string; rpName: string };
}

export function getAccountConfig(): AccountConfig {
  const parsed = AccountEnvSchema.safeParse(process.env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
    throw new Error(`Invalid configuration: ${problems}`);
  }
  const env = parsed.data;
  const { appUrl } = getConfig();
  return {
    signUp: { policy: env.SIGN_UP_POLICY, allowedDomains: env.SIGN_UP_ALLOWED_DOMAINS ?? [] },
    authRequestsPerIpPerMinute: env.AUTH_REQUESTS_PER_IP_PER_MINUTE,
    webauthn: {
      rpId: env.WEBAUTHN_RP_ID ?? new URL(appUrl).hostname,
      origin: new URL(env.WEBAUTHN_ORIGIN ?? appUrl).origin,
      rpName: env.WEBAUTHN_RP_NAME,
    },
  };
}
