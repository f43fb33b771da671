/**
 * The settings of accounts (docs/accounts.md, "Settings"), apart from lib/config.ts: only the
 * account routes read them, and the data plane, which loads lib/config.ts at its cold start, is
 * not made to carry them. Read from the environment at each call (cheap; tests change it).
 */
import * as z from "zod/mini";
import { getConfig } from "./config.ts";

const AccountEnvSchema = z.object({
  /** Passkeys (docs/accounts.md, "Passkeys"): the relying party's id; default the hostname of APP_URL. */
  WEBAUTHN_RP_ID: z.optional(z.string().check(z.minLength(1))),
  /** The origin the browser reports in a passkey ceremony; default the origin of APP_URL. */
  WEBAUTHN_ORIGIN: z.optional(z.url()),
  /** The name an authenticator shows for the relying party. */
  WEBAUTHN_RP_NAME: z._default(z.string().check(z.minLength(1)), "API gateway"),
});

export interface AccountConfig {
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
    webauthn: {
      rpId: env.WEBAUTHN_RP_ID ?? new URL(appUrl).hostname,
      origin: new URL(env.WEBAUTHN_ORIGIN ?? appUrl).origin,
      rpName: env.WEBAUTHN_RP_NAME,
    },
  };
}
