/**
 * Credential secrets (spec 2.5): the zod schema of each secret, and (re-exported from the zod-free
 * auth-types.ts) which auth types exist and where each may be used. Types are inferred from the
 * schemas; nothing here is repeated by hand.
 *
 * Secrets are parsed once, when the credential is created, and the parsed value (defaults applied)
 * is what gets encrypted and stored. docs/credentials.md is the user-facing description.
 */
import { z } from "zod";
import { HEADER_VALUE, RESERVED_HEADER_NAMES } from "#lib/net/header-rules.ts";
import {
  AUTH_TYPE_USAGE,
  AUTH_TYPES,
  type AuthType,
  CREDENTIAL_TYPES,
  type CredentialType,
  isAuthType,
  isUsableAs,
  type ProxyAuthType,
  type TargetAuthType,
} from "#lib/shared/auth-types.ts";
import { validationFailed } from "#lib/shared/errors.ts";
import { HMAC_MIN_KEY_BYTES, isHmacAlgorithm, JWT_ALGORITHMS } from "./jwt-algorithms.ts";

export {
  AUTH_TYPE_USAGE,
  AUTH_TYPES,
  type AuthType,
  CREDENTIAL_TYPES,
  type CredentialType,
  isAuthType,
  isUsableAs,
  type ProxyAuthType,
  type TargetAuthType,
} from "#lib/shared/auth-types.ts";

// ---------------------------------------------------------------------------------------------
// Building blocks
// ---------------------------------------------------------------------------------------------

export const MAX_RECORD_ENTRIES = 50;
/** Serialized size bound of a JSON object in a secret (body data, token request body). */
export const MAX_JSON_OBJECT_BYTES = 16_384;
/** Nesting bound of anything in a secret, checked before parsing. */
export const MAX_SECRET_DEPTH = 16;

/** RFC 9110 token: the characters allowed in a header name. */
const HTTP_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** No control characters at all (names, identifiers, prefixes). */
const NO_CONTROL = /^\P{Cc}*$/u;

const headerName = z
  .string()
  .min(1, "must not be empty")
  .max(256, "at most 256 characters")
  .regex(HTTP_TOKEN, "must be a valid HTTP header name")
  .refine((name) => !RESERVED_HEADER_NAMES.has(name.toLowerCase()), "is managed by the gateway");

const headerValue = z
  .string()
  .max(4096, "at most 4096 characters")
  .regex(HEADER_VALUE, "must not contain control characters or characters beyond Latin-1");

const queryParamName = z
  .string()
  .min(1, "must not be empty")
  .max(256, "at most 256 characters")
  .regex(NO_CONTROL, "must not contain control characters");

const queryParamValue = z
  .string()
  .max(2048, "at most 2048 characters")
  .regex(NO_CONTROL, "must not contain control characters");

const tooManyEntries = (value: object) => Object.keys(value).length <= MAX_RECORD_ENTRIES;
const tooManyMessage = `at most ${MAX_RECORD_ENTRIES} entries`;

/** Header name -> value, names unique regardless of case. */
export const HeaderRecord = z
  .record(headerName, headerValue)
  .refine(tooManyEntries, tooManyMessage)
  .superRefine((headers, ctx) => {
    const seen = new Set<string>();
    for (const name of Object.keys(headers)) {
      const lower = name.toLowerCase();
      if (seen.has(lower)) {
        ctx.addIssue({ code: "custom", path: [name], message: "repeats a header name (names ignore case)" });
      }
      seen.add(lower);
    }
  });

/** Query parameter name -> value. */
export const QueryParamRecord = z
  .record(queryParamName, queryParamValue)
  .refine(tooManyEntries, tooManyMessage);

/** A JSON object (not an array), bounded in size. */
export const JsonObject = z
  .record(z.string().max(256, "at most 256 characters"), z.json())
  .refine(
    (value) => Buffer.byteLength(JSON.stringify(value)) <= MAX_JSON_OBJECT_BYTES,
    `at most ${MAX_JSON_OBJECT_BYTES} bytes as JSON`,
  );

/** Optional on every secret: merged into every request made with the credential. */
const additions = {
  additionalHeaders: HeaderRecord.optional(),
  additionalQueryParams: QueryParamRecord.optional(),
};

/** A secret value sent in a header or query: no control characters, no surrounding whitespace. */
const secretValue = (max: number) =>
  z
    .string()
    .min(1, "must not be empty")
    .max(max, `at most ${max} characters`)
    .regex(HEADER_VALUE, "must not contain control characters or characters beyond Latin-1")
    .refine((value) => value.trim() === value, "must not start or end with whitespace");

/** An optional prefix put before a value with one space (e.g. `Bearer`); empty means none. */
const prefix = z
  .string()
  .trim()
  .max(64, "at most 64 characters")
  .regex(HEADER_VALUE, "must not contain control characters or characters beyond Latin-1");

const isLoopbackHost = (hostname: string) =>
  hostname === "localhost" || hostname === "[::1]" || /^127(\.\d{1,3}){3}$/.test(hostname);

/** An absolute https URL (plain http only for loopback hosts, for local development). */
export const SecureUrl = z
  .string()
  .trim()
  .max(2048, "at most 2048 characters")
  .superRefine((value, ctx) => {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      ctx.addIssue({ code: "custom", message: "must be an absolute URL" });
      return;
    }
    if (url.protocol !== "https:" && !(url.protocol === "http:" && isLoopbackHost(url.hostname))) {
      ctx.addIssue({ code: "custom", message: "must use https (http only for localhost)" });
    }
    if (url.username || url.password) {
      ctx.addIssue({ code: "custom", message: "must not contain a user name or password" });
    }
    if (url.hash) ctx.addIssue({ code: "custom", message: "must not contain a fragment" });
  });

/** A dot path into a JSON document, e.g. `data.token` or `data.items.0.token`. */
export const DotPath = z
  .string()
  .trim()
  .min(1, "must not be empty")
  .max(256, "at most 256 characters")
  .regex(NO_CONTROL, "must not contain control characters")
  .refine(
    (path) => path.split(".").every((segment) => segment.length > 0),
    "must be dot-separated names or indexes, e.g. data.token",
  )
  .refine((path) => path.split(".").length <= 32, "at most 32 segments");

/**
 * A key name is a header name for header placement and a query parameter name (required) for query
 * placement; a prefix goes only before a header value.
 */
function checkPlacement(
  { keyName, placement, prefix }: { keyName?: string; placement: "header" | "query"; prefix?: string },
  ctx: z.RefinementCtx,
): void {
  if (placement === "query" && prefix) {
    ctx.addIssue({ code: "custom", path: ["prefix"], message: "applies only to header placement" });
  }
  if (keyName === undefined) {
    if (placement === "query") {
      ctx.addIssue({ code: "custom", path: ["keyName"], message: "is required when placement is query" });
    }
    return;
  }
  const result = (placement === "header" ? headerName : queryParamName).safeParse(keyName);
  for (const issue of result.error?.issues ?? []) {
    ctx.addIssue({ code: "custom", path: ["keyName"], message: issue.message });
  }
}

// ---------------------------------------------------------------------------------------------
// The secret of each auth type
// ---------------------------------------------------------------------------------------------

export const ApiKeySecretSchema = z
  .strictObject({
    keyName: z.string().trim().min(1, "must not be empty").max(256, "at most 256 characters"),
    keyValue: secretValue(4096),
    placement: z.enum(["header", "query"]).default("header"),
    prefix: prefix.optional(),
    ...additions,
  })
  .superRefine((secret, ctx) => checkPlacement(secret, ctx));

export const BearerSecretSchema = z.strictObject({
  token: secretValue(8192),
  prefix: prefix.default("Bearer"),
  ...additions,
});

export const BasicAuthSecretSchema = z.strictObject({
  username: z
    .string()
    .min(1, "must not be empty")
    .max(256, "at most 256 characters")
    .regex(NO_CONTROL, "must not contain control characters")
    .refine((value) => !value.includes(":"), "must not contain a colon (RFC 7617)"),
  password: z
    .string()
    .min(1, "must not be empty")
    .max(1024, "at most 1024 characters")
    .regex(NO_CONTROL, "must not contain control characters"),
  ...additions,
});

/** Compact JWS (3 segments) or JWE (5 segments), base64url. */
const COMPACT_JWT = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]*){2}$|^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]*){4}$/;

export const JwtSecretSchema = z.strictObject({
  token: secretValue(8192).regex(COMPACT_JWT, "must be a compact JWT (base64url segments joined by dots)"),
  prefix: prefix.optional(),
  ...additions,
});

export { isHmacAlgorithm, JWT_ALGORITHMS, type JwtAlgorithm } from "./jwt-algorithms.ts";

/** Claims validated by their own fields (or by every verification), never by requiredClaims. */
const RESERVED_CLAIMS = new Set(["iss", "aud", "sub", "exp", "nbf", "iat"]);

const claimValue = z.union(
  [
    z.string().max(1024, "at most 1024 characters"),
    z.number().finite(),
    z.boolean(),
    z
      .array(z.string().max(1024, "at most 1024 characters"))
      .min(1, "must not be empty")
      .max(50, "at most 50 values"),
  ],
  { error: "must be a string, a number, a boolean or a non-empty list of strings (any of them matches)" },
);

export const JwtVerifySecretSchema = z
  .strictObject({
    algorithms: z
      .array(z.enum(JWT_ALGORITHMS))
      .min(1, "at least one algorithm is required")
      .max(JWT_ALGORITHMS.length)
      .refine((list) => new Set(list).size === list.length, "must not repeat an algorithm"),
    issuer: z.string().trim().min(1, "must not be empty").max(2048, "at most 2048 characters"),
    audience: z.string().trim().min(1, "must not be empty").max(2048, "at most 2048 characters"),
    subject: z
      .string()
      .trim()
      .min(1, "must not be empty")
      .max(1024, "at most 1024 characters")
      .refine((value) => !value.slice(0, -1).includes("*"), "a wildcard * is allowed only at the end"),
    jwksUri: SecureUrl.optional(),
    sharedSecret: z
      .string()
      .min(32, "at least 32 characters")
      .max(4096, "at most 4096 characters")
      .optional(),
    clockSkewSeconds: z.number().int("must be a whole number").min(0).max(300).default(30),
    jwksRefreshHint: z.number().int("must be a whole number").min(60).max(86_400).optional(),
    failPolicy: z.enum(["fail-closed", "fail-open"]).default("fail-closed"),
    requiredClaims: z
      .record(
        z
          .string()
          .min(1, "must not be empty")
          .max(256, "at most 256 characters")
          .refine((name) => !RESERVED_CLAIMS.has(name), "is validated by its own field"),
        claimValue,
      )
      .refine(tooManyEntries, tooManyMessage)
      .optional(),
    ...additions,
  })
  .superRefine((secret, ctx) => {
    const hmac = secret.algorithms.filter(isHmacAlgorithm);
    const asymmetric = secret.algorithms.filter((algorithm) => !isHmacAlgorithm(algorithm));
    if (hmac.length > 0 && asymmetric.length > 0) {
      ctx.addIssue({
        code: "custom",
        path: ["algorithms"],
        message: "must not mix HS* algorithms with asymmetric ones (one signing source per credential)",
      });
    }
    if ((secret.jwksUri === undefined) === (secret.sharedSecret === undefined)) {
      ctx.addIssue({
        code: "custom",
        path: [secret.jwksUri === undefined ? "jwksUri" : "sharedSecret"],
        message: "exactly one of jwksUri and sharedSecret is required",
      });
      return;
    }
    if (secret.sharedSecret !== undefined) {
      if (asymmetric.length > 0) {
        ctx.addIssue({
          code: "custom",
          path: ["jwksUri"],
          message: `is required for ${asymmetric.join(", ")} (sharedSecret verifies only HS256/HS384/HS512)`,
        });
      }
      const needed = Math.max(0, ...hmac.map((algorithm) => HMAC_MIN_KEY_BYTES[algorithm] ?? 0));
      if (Buffer.byteLength(secret.sharedSecret) < needed) {
        ctx.addIssue({
          code: "custom",
          path: ["sharedSecret"],
          message: `must be at least ${needed} bytes for ${hmac.join(", ")}`,
        });
      }
      if (secret.jwksRefreshHint !== undefined) {
        ctx.addIssue({ code: "custom", path: ["jwksRefreshHint"], message: "applies only with jwksUri" });
      }
      if (secret.failPolicy === "fail-open") {
        ctx.addIssue({
          code: "custom",
          path: ["failPolicy"],
          message: "fail-open applies only with jwksUri",
        });
      }
    } else if (hmac.length > 0) {
      ctx.addIssue({
        code: "custom",
        path: ["sharedSecret"],
        message: `is required for ${hmac.join(", ")} (jwksUri serves only asymmetric keys)`,
      });
    }
  });

export const CUSTOM_TOKEN_EXPIRY_METHODS = [
  "expires_in",
  "expires_in_ms",
  "expires_at",
  "expires_at_iso",
] as const;

export const CustomTokenSecretSchema = z
  .strictObject({
    tokenUrl: SecureUrl,
    method: z.enum(["GET", "POST"]).default("POST"),
    requestHeaders: HeaderRecord.optional(),
    requestQueryParams: QueryParamRecord.optional(),
    requestBody: JsonObject.optional(),
    tokenPath: DotPath,
    expiryMethod: z.enum(CUSTOM_TOKEN_EXPIRY_METHODS).optional(),
    expiryPath: DotPath.optional(),
    defaultTtlSeconds: z.number().int("must be a whole number").min(1).max(86_400).default(300),
    keyName: z.string().trim().min(1, "must not be empty").max(256, "at most 256 characters").optional(),
    placement: z.enum(["header", "query"]).default("header"),
    prefix: prefix.optional(),
    additionalData: JsonObject.optional(),
    ...additions,
  })
  .superRefine((secret, ctx) => {
    checkPlacement(secret, ctx);
    if (secret.requestBody !== undefined && secret.method === "GET") {
      ctx.addIssue({ code: "custom", path: ["requestBody"], message: "is sent only with method POST" });
    }
    if (secret.expiryMethod !== undefined && secret.expiryPath === undefined) {
      ctx.addIssue({ code: "custom", path: ["expiryPath"], message: "is required with expiryMethod" });
    }
    if (secret.expiryPath !== undefined && secret.expiryMethod === undefined) {
      ctx.addIssue({ code: "custom", path: ["expiryMethod"], message: "is required with expiryPath" });
    }
  })
  .transform((secret) => ({ ...secret, keyName: secret.keyName ?? "Authorization" }));

export const OAUTH2_FLOWS = ["client_credentials", "authorization_code", "pkce"] as const;

/** Token request parameters the gateway sets itself. */
const RESERVED_TOKEN_PARAMS = new Set([
  "grant_type",
  "client_id",
  "client_secret",
  "code",
  "code_verifier",
  "redirect_uri",
  "refresh_token",
  "scope",
  "audience",
]);

export const OAuth2SecretSchema = z
  .strictObject({
    flow: z.enum(OAUTH2_FLOWS),
    tokenUrl: SecureUrl,
    authorizationUrl: SecureUrl.optional(),
    clientId: z
      .string()
      .trim()
      .min(1, "must not be empty")
      .max(512, "at most 512 characters")
      .regex(NO_CONTROL, "must not contain control characters"),
    clientSecret: z
      .string()
      .min(1, "must not be empty")
      .max(4096, "at most 4096 characters")
      .regex(NO_CONTROL, "must not contain control characters")
      .optional(),
    scope: z
      .string()
      .trim()
      .min(1, "must not be empty")
      .max(1024, "at most 1024 characters")
      .regex(NO_CONTROL, "must not contain control characters")
      .optional(),
    audience: z
      .string()
      .trim()
      .min(1, "must not be empty")
      .max(2048, "at most 2048 characters")
      .regex(NO_CONTROL, "must not contain control characters")
      .optional(),
    tokenAuthMethod: z.enum(["client_secret_basic", "client_secret_post"]).default("client_secret_basic"),
    extraTokenParams: z
      .record(
        queryParamName.refine((name) => !RESERVED_TOKEN_PARAMS.has(name), "is set by the gateway"),
        queryParamValue,
      )
      .refine(tooManyEntries, tooManyMessage)
      .optional(),
    ...additions,
  })
  .superRefine((secret, ctx) => {
    if (secret.flow !== "pkce" && secret.clientSecret === undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["clientSecret"],
        message: `is required for the ${secret.flow} flow`,
      });
    }
    if (secret.flow === "client_credentials") {
      if (secret.authorizationUrl !== undefined) {
        ctx.addIssue({
          code: "custom",
          path: ["authorizationUrl"],
          message: "is not used by the client_credentials flow",
        });
      }
    } else if (secret.authorizationUrl === undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["authorizationUrl"],
        message: `is required for the ${secret.flow} flow`,
      });
    }
  });

export const CustomSecretSchema = z
  .strictObject({ ...additions, data: JsonObject.optional() })
  .superRefine((secret, ctx) => {
    const size = (value: object | undefined) => (value ? Object.keys(value).length : 0);
    if (size(secret.additionalHeaders) + size(secret.additionalQueryParams) + size(secret.data) === 0) {
      ctx.addIssue({
        code: "custom",
        message: "needs at least one of additionalHeaders, additionalQueryParams or data (not empty)",
      });
    }
  });

export const NoneSecretSchema = z.strictObject({ ...additions });

export const SECRET_SCHEMAS = {
  apiKey: ApiKeySecretSchema,
  bearer: BearerSecretSchema,
  jwt: JwtSecretSchema,
  basicAuth: BasicAuthSecretSchema,
  oauth2: OAuth2SecretSchema,
  customToken: CustomTokenSecretSchema,
  custom: CustomSecretSchema,
  none: NoneSecretSchema,
  jwtVerify: JwtVerifySecretSchema,
} as const satisfies Record<AuthType, z.ZodType>;

export type SecretOf<A extends AuthType> = z.infer<(typeof SECRET_SCHEMAS)[A]>;
export type ApiKeySecret = SecretOf<"apiKey">;
export type BearerSecret = SecretOf<"bearer">;
export type JwtSecret = SecretOf<"jwt">;
export type BasicAuthSecret = SecretOf<"basicAuth">;
export type OAuth2Secret = SecretOf<"oauth2">;
export type CustomTokenSecret = SecretOf<"customToken">;
export type CustomSecret = SecretOf<"custom">;
export type NoneSecret = SecretOf<"none">;
export type JwtVerifySecret = SecretOf<"jwtVerify">;
export type CredentialSecret = SecretOf<AuthType>;
export type TargetSecret = SecretOf<TargetAuthType>;
export type ProxySecret = SecretOf<ProxyAuthType>;

// ---------------------------------------------------------------------------------------------
// Parsing a request's secret
// ---------------------------------------------------------------------------------------------

/** Iterative depth check, so a hostile document cannot exhaust the stack of the recursive parser. */
function deeperThan(value: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  for (let top = stack.pop(); top; top = stack.pop()) {
    const [current, depth] = top;
    if (current === null || typeof current !== "object") continue;
    if (depth >= limit) return true;
    for (const child of Object.values(current)) stack.push([child, depth + 1]);
  }
  return false;
}

/**
 * Validate the secret of a new credential: the auth type must exist and be usable for the
 * credential type, and the secret must match that auth type's schema. Returns the parsed secret
 * (defaults applied), which is what gets encrypted. Throws the spec's 400 naming `authType` or each
 * failing `secret.<field>`.
 */
export function parseCredentialSecret<A extends AuthType>(
  credentialType: CredentialType,
  authType: A,
  secret: unknown,
): SecretOf<A>;
export function parseCredentialSecret(
  credentialType: CredentialType,
  authType: string,
  secret: unknown,
): CredentialSecret;
export function parseCredentialSecret(
  credentialType: CredentialType,
  authType: string,
  secret: unknown,
): CredentialSecret {
  if (!(CREDENTIAL_TYPES as readonly string[]).includes(credentialType)) {
    throw validationFailed([
      { field: "credentialType", problem: `must be one of ${CREDENTIAL_TYPES.join(", ")}` },
    ]);
  }
  if (!isAuthType(authType)) {
    throw validationFailed([{ field: "authType", problem: `must be one of ${AUTH_TYPES.join(", ")}` }]);
  }
  if (!isUsableAs(credentialType, authType)) {
    throw validationFailed([
      {
        field: "authType",
        problem: `${authType} cannot be used for a ${credentialType} credential (usable as: ${AUTH_TYPE_USAGE[authType].join(", ")})`,
      },
    ]);
  }
  if (deeperThan(secret, MAX_SECRET_DEPTH)) {
    throw validationFailed([
      { field: "secret", problem: `must not be nested deeper than ${MAX_SECRET_DEPTH} levels` },
    ]);
  }
  const result = SECRET_SCHEMAS[authType].safeParse(secret);
  if (result.success) return result.data;
  throw validationFailed(
    result.error.issues.flatMap((issue) => {
      const base = ["secret", ...issue.path.map(String)];
      if (issue.code === "unrecognized_keys") {
        return issue.keys.map((key) => ({
          field: [...base, key].join("."),
          problem: "is not a field of this auth type's secret",
        }));
      }
      if (issue.code === "invalid_key") {
        return [{ field: base.join("."), problem: issue.issues[0]?.message ?? "is not a valid name" }];
      }
      return [{ field: base.join("."), problem: issue.message }];
    }),
  );
}
