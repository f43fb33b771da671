/**
 * The credential test (spec 4.5, "not shown": designed here, documented in docs/credentials.md):
 * send one live GET or POST with the credential applied, to a target's test path (or another path
 * of it) or to a full URL, and answer with the status, headers, a capped body and the timing.
 *
 * The request goes through the SSRF-guarded client (lib/net/outbound.ts). Extra headers and query
 * parameters are applied first and the credential last, so they can never override it. The
 * answer never contains the secret: a query-placed key is redacted from the URL shown, and the
 * plaintext of every secret of the credential, in any form, is replaced by the marker in the URL,
 * the headers and the body (a target may echo what it received; lib/vault/secret-redaction.ts).
 */
import { z } from "zod";
import {
  OutboundBlockedError,
  OutboundConnectError,
  OutboundTimeoutError,
  sendOutbound,
} from "#lib/net/outbound.ts";
import { redactQueryPairs, setQueryPairs } from "#lib/net/query-pairs.ts";
import { RelativePath } from "#lib/net/url-rules.ts";
import {
  badRequest,
  forbidden,
  upstreamFailed,
  upstreamTimedOut,
  validationFailed,
} from "#lib/shared/errors.ts";
import { can, minimumRoleFor } from "#lib/shared/roles.ts";
import {
  applyTargetCredential,
  credentialQueryParamNames,
  type OutgoingRequest,
} from "#lib/vault/apply-credential.ts";
import { CustomTokenError, fetchCustomToken } from "#lib/vault/custom-token.ts";
import { decryptSecret } from "#lib/vault/envelope.ts";
import { fetchClientCredentialsToken, OAuthError } from "#lib/vault/oauth2.ts";
import {
  redactedPrefix,
  type SecretRedactor,
  secretRedactor,
  secretValues,
} from "#lib/vault/secret-redaction.ts";
import {
  type AuthType,
  type CustomTokenSecret,
  HeaderRecord,
  type OAuth2Secret,
  QueryParamRecord,
  type TargetSecret,
} from "#lib/vault/secret-schemas.ts";
import type { ClientAccess } from "./access.ts";
import { refuseWhileBillingSuspended } from "./billing-suspension.ts";
import { requireCredential } from "./credentials.ts";
import { requireTarget } from "./targets.ts";

/** Auth types the live test applies (spec 4.5); oauth2 uses its consent flow, customToken the token test. */
export const TESTABLE_AUTH_TYPES: readonly AuthType[] = [
  "apiKey",
  "bearer",
  "jwt",
  "basicAuth",
  "custom",
  "none",
];
/** Response body bytes shown by the test. */
export const TEST_BODY_LIMIT = 64 * 1024;

export const CredentialTestBody = z
  .object({
    method: z.enum(["GET", "POST"]).default("GET"),
    targetId: z.string().min(1).max(64).optional(),
    url: z
      .string()
      .max(2048)
      .refine((value) => {
        try {
          return ["http:", "https:"].includes(new URL(value).protocol);
        } catch {
          return false;
        }
      }, "must be an absolute http(s) URL")
      .optional(),
    path: RelativePath.optional(),
    // The secret's header rules: no gateway-managed names (host, content-length, transfer-encoding...)
    // and no values the HTTP client refuses, so a bad header is a 400 and not a 502.
    headers: HeaderRecord.optional(),
    query: QueryParamRecord.optional(),
    body: z.unknown().optional(),
    timeoutSeconds: z.number().int().min(1).max(30).default(10),
  })
  .strict()
  .superRefine((body, ctx) => {
    if ((body.targetId === undefined) === (body.url === undefined))
      ctx.addIssue({ code: "custom", path: ["targetId"], message: "give exactly one of targetId or url" });
    if (body.path !== undefined && body.url !== undefined)
      ctx.addIssue({ code: "custom", path: ["path"], message: "is only used with targetId" });
    if (body.body !== undefined && body.method !== "POST")
      ctx.addIssue({ code: "custom", path: ["body"], message: "is only sent with POST" });
  });
export type CredentialTestInput = z.infer<typeof CredentialTestBody>;

/** Content types shown as text (others as base64). */
export const TEXT_TYPES =
  /^(text\/|application\/(json|xml|x-www-form-urlencoded|javascript)|[^;]*\+(json|xml))/i;

/** The target's base URL joined with a relative path; query strings are kept as written. */
function joinUrl(base: string, path: string): URL {
  const url = new URL(base);
  const mark = path.indexOf("?");
  const pathname = mark === -1 ? path : path.slice(0, mark);
  const search = mark === -1 ? "" : path.slice(mark + 1);
  url.pathname = `${url.pathname.replace(/\/$/, "")}/${pathname.replace(/^\//, "")}`;
  if (search) url.search = [url.search.slice(1), search].filter(Boolean).join("&");
  return url;
}

/** A credential's decrypted secret and auth type (a credential still waiting for OAuth2 consent: 400). */
export async function loadCredentialSecret(clientId: string, credentialId: string) {
  const { region, credential } = await requireCredential(clientId, credentialId);
  if (credential.credentialTemporary === true)
    throw badRequest("The credential is still waiting for its OAuth2 authorization");
  const secret = await decryptSecret<Record<string, unknown>>(credential.secretEnvelope, {
    region,
    clientId,
    credentialId,
  });
  return { secret, authType: credential.credentialAuthType, region };
}

/**
 * Run the test. The caller's access was checked for `use` (the operation's role); naming a full
 * `url` also needs `manage`, which depends on the body, so it is checked here.
 */
export async function testCredential(member: ClientAccess, credentialId: string, body: CredentialTestInput) {
  const { clientId } = member;
  // A full URL can be any server, so it could carry the secret away: only those who manage the
  // client's resources may name one. Others test against the client's own targets, which those
  // members configured.
  if (body.url !== undefined && !can(member.roles, "manage"))
    throw forbidden(
      `Forbidden: testing against a full url requires the ${minimumRoleFor("manage")} role; use targetId`,
    );
  const { secret, authType, region } = await loadCredentialSecret(clientId, credentialId);
  if (!TESTABLE_AUTH_TYPES.includes(authType)) {
    throw badRequest(
      authType === "customToken" || authType === "oauth2"
        ? `A ${authType} credential is tested with POST .../credentials/{credentialId}/token-test`
        : `A ${authType} credential cannot be applied to a request`,
    );
  }
  let url: URL;
  if (body.targetId) {
    const { target } = await requireTarget(clientId, body.targetId);
    url = joinUrl(target.targetBaseURL, body.path ?? target.targetTestPath);
  } else if (body.url !== undefined) {
    url = new URL(body.url);
  } else {
    // The body's schema requires exactly one of the two.
    throw validationFailed([{ field: "targetId", problem: "give exactly one of targetId or url" }]);
  }
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(body.headers ?? {})) headers[name.toLowerCase()] = value;
  setQueryPairs(url, body.query);
  let payload: Buffer | undefined;
  if (body.method === "POST" && body.body !== undefined) {
    payload = Buffer.from(typeof body.body === "string" ? body.body : JSON.stringify(body.body));
    headers["content-type"] ??= typeof body.body === "string" ? "text/plain" : "application/json";
  }
  const request: OutgoingRequest = {
    method: body.method,
    url,
    headers,
    ...(payload ? { body: payload } : {}),
  };
  // The credential last: extra headers and query parameters cannot override it.
  const applied = applyTargetCredential(request, authType, secret as TargetSecret);
  const redactor = secretRedactor(secretValues(authType, secret));
  // A suspended organisation's test is refused as its proxies are (402), before anything is sent.
  await refuseWhileBillingSuspended(clientId, region);

  try {
    const response = await sendOutbound({
      method: applied.method,
      url: applied.url,
      headers: applied.headers,
      body: applied.body,
      timeoutMs: body.timeoutSeconds * 1000,
      // A little more than is shown, so a secret crossing the cut is recognised and redacted whole.
      maxResponseBytes: TEST_BODY_LIMIT + redactor.lookahead,
    });
    const shown = new URL(response.url);
    redactQueryPairs(shown, credentialQueryParamNames(authType, secret as never));
    return {
      request: { method: applied.method, url: redactor.text(shown.toString()) },
      ...shownAnswer(redactor, response, TEST_BODY_LIMIT),
      durationMs: response.timings.endedAt - response.timings.startedAt,
    };
  } catch (error) {
    throw outboundFailure(error);
  }
}

/**
 * A target's answer as a person (or an agent) is shown it: status, headers with the secrets
 * redacted, and the body redacted first, then cut at `limit` (on a UTF-8 character boundary for
 * text; base64 otherwise). Fetch at least `limit + redactor.lookahead` bytes, so a secret crossing
 * the cut is recognised and redacted whole.
 */
export function shownAnswer(
  redactor: SecretRedactor,
  response: { status: number; headers: Record<string, string | string[]>; body: Buffer; truncated: boolean },
  limit: number,
) {
  const contentType = String(response.headers["content-type"] ?? "");
  const isText = TEXT_TYPES.test(contentType) || contentType === "";
  const shown = redactedPrefix(redactor, response.body, limit, {
    utf8: isText,
    truncatedInput: response.truncated,
  });
  return {
    status: response.status,
    headers: redactHeaderValues(redactor, response.headers),
    body: isText
      ? new TextDecoder("utf-8", { ignoreBOM: true }).decode(shown.bytes)
      : shown.bytes.toString("base64"),
    bodyEncoding: isText ? ("utf8" as const) : ("base64" as const),
    bodyTruncated: shown.truncated,
  };
}

/** Header names as they are, values with the secrets redacted. */
export function redactHeaderValues(
  redactor: SecretRedactor,
  headers: Record<string, string | string[]>,
): Record<string, string | string[]> {
  const safe = new Map<string, string | string[]>();
  for (const [name, value] of Object.entries(headers))
    safe.set(name, Array.isArray(value) ? value.map((one) => redactor.text(one)) : redactor.text(value));
  return Object.fromEntries(safe);
}

function outboundFailure(error: unknown): unknown {
  if (error instanceof OutboundBlockedError) return badRequest(`The address is not allowed: ${error.reason}`);
  if (error instanceof OutboundTimeoutError) return upstreamTimedOut("The request timed out");
  if (error instanceof OutboundConnectError) return upstreamFailed("The target could not be reached");
  return error;
}

/**
 * The token test of customToken and oauth2 client_credentials credentials: fetch a fresh token
 * and answer with when it expires, never with the token itself.
 */
export async function testCredentialToken({ clientId }: ClientAccess, credentialId: string) {
  const { secret, authType, region } = await loadCredentialSecret(clientId, credentialId);
  const redactor = secretRedactor(secretValues(authType, secret));
  // A suspended organisation's token is not fetched (402, as its proxies); other types stay a 400.
  const fetchesToken =
    authType === "customToken" ||
    (authType === "oauth2" && (secret as OAuth2Secret).flow === "client_credentials");
  if (fetchesToken) await refuseWhileBillingSuspended(clientId, region);
  const started = Date.now();
  let expiresAt: number | null;
  let tokenLength: number;
  try {
    if (authType === "customToken") {
      const token = await fetchCustomToken(secret as CustomTokenSecret);
      expiresAt = token.expiresAt;
      tokenLength = token.token.length;
    } else if (authType === "oauth2" && (secret as OAuth2Secret).flow === "client_credentials") {
      const oauth = secret as OAuth2Secret;
      const tokens = await fetchClientCredentialsToken({
        tokenUrl: oauth.tokenUrl,
        clientId: oauth.clientId,
        clientSecret: oauth.clientSecret ?? "",
        tokenAuthMethod: oauth.tokenAuthMethod,
        scope: oauth.scope,
        audience: oauth.audience,
        extraTokenParams: oauth.extraTokenParams,
      });
      expiresAt = tokens.expiresAt;
      tokenLength = tokens.accessToken.length;
    } else {
      throw badRequest(
        `The token test is for customToken and oauth2 client_credentials credentials, not ${authType}`,
      );
    }
  } catch (error) {
    // The messages name the endpoint's host and status; redacted all the same, as every answer.
    const message = error instanceof Error ? redactor.text(error.message) : "";
    if (error instanceof CustomTokenError) {
      if (error.reason === "blocked") throw badRequest(`The token URL is not allowed: ${message}`);
      if (error.reason === "timeout") throw upstreamTimedOut("The token endpoint timed out");
      throw upstreamFailed(`The token endpoint failed: ${message}`);
    }
    if (error instanceof OAuthError) throw upstreamFailed(`The token endpoint failed: ${message}`);
    throw outboundFailure(error);
  }
  return {
    tokenReceived: true,
    tokenLength,
    expiresAt: expiresAt === null ? null : new Date(expiresAt).toISOString(),
    expiresInSeconds: expiresAt === null ? null : Math.round((expiresAt - Date.now()) / 1000),
    durationMs: Date.now() - started,
  };
}
