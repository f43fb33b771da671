/**
 * Credential auth types and credential types (spec 2.5), without zod: the credential entity
 * (lib/db/entities/credential.ts) reads them on the data plane's cold start. secret-schemas.ts,
 * which holds the secret schemas, re-exports them.
 */
export const AUTH_TYPES = [
  "apiKey",
  "bearer",
  "jwt",
  "basicAuth",
  "oauth2",
  "customToken",
  "custom",
  "none",
  "jwtVerify",
] as const;
export type AuthType = (typeof AUTH_TYPES)[number];

export const CREDENTIAL_TYPES = ["proxy", "target"] as const;
export type CredentialType = (typeof CREDENTIAL_TYPES)[number];

/** Where each auth type may be used (the spec's "Usable as" column). */
export const AUTH_TYPE_USAGE = {
  apiKey: ["proxy", "target"],
  bearer: ["proxy", "target"],
  jwt: ["proxy", "target"],
  basicAuth: ["proxy", "target"],
  oauth2: ["target"],
  customToken: ["target"],
  custom: ["target"],
  none: ["target"],
  jwtVerify: ["proxy"],
} as const satisfies Record<AuthType, readonly CredentialType[]>;

type UsableAs<C extends CredentialType> = {
  [A in AuthType]: C extends (typeof AUTH_TYPE_USAGE)[A][number] ? A : never;
}[AuthType];
export type TargetAuthType = UsableAs<"target">;
export type ProxyAuthType = UsableAs<"proxy">;

export function isAuthType(value: unknown): value is AuthType {
  return typeof value === "string" && (AUTH_TYPES as readonly string[]).includes(value);
}

export function isUsableAs(credentialType: CredentialType, authType: AuthType): boolean {
  return (AUTH_TYPE_USAGE[authType] as readonly CredentialType[]).includes(credentialType);
}
