/**
 * Application of a target credential to an outgoing request (spec 2.5 "Application of
 * credentials"): the one implementation used by the data plane and by the credential test.
 *
 * Order inside `applyTargetCredential`: the secret's additionalHeaders / additionalQueryParams,
 * then its body data (custom, customToken), then the credential's own auth header or query
 * parameter, LAST, replacing any header of the same name regardless of case. So nothing already on
 * the request (caller headers, extra headers of the credential test, the proxy's additions merged
 * earlier with `mergeProxyAdditions`) can override the credential.
 *
 * Query strings are edited pair by pair: pairs that are not replaced keep their exact original
 * encoding (the spec passes query parameters through unchanged).
 */

import { isSettableHeader } from "#lib/net/header-rules.ts";
import { setQueryPairs } from "#lib/net/query-pairs.ts";
import type {
  ApiKeySecret,
  AuthType,
  BasicAuthSecret,
  BearerSecret,
  CredentialSecret,
  CustomSecret,
  CustomTokenSecret,
  JwtSecret,
  TargetSecret,
} from "./secret-schemas.ts";

export interface OutgoingRequest {
  method: string;
  url: URL;
  /** Lower-case header names. */
  headers: Record<string, string>;
  body?: Buffer;
}

export interface ApplyOptions {
  /** The current token of a customToken or oauth2 credential (fetched and cached by the caller). */
  dynamicToken?: string;
}

export type JsonObjectValue = Record<string, unknown>;

/** The credential cannot be applied (wrong auth type for a target, or a dynamic token is missing). */
export class CredentialApplicationError extends Error {
  override name = "CredentialApplicationError";
}

const BODY_METHODS = new Set(["POST", "PUT", "PATCH"]);

function cloneRequest(request: OutgoingRequest): OutgoingRequest {
  // Null prototype: a header of any name (`__proto__`, `constructor`) is an own entry.
  const headers: Record<string, string> = Object.create(null);
  for (const [name, value] of Object.entries(request.headers)) headers[name.toLowerCase()] = value;
  return {
    method: request.method,
    url: new URL(request.url.href),
    headers,
    ...(request.body !== undefined ? { body: request.body } : {}),
  };
}

/** Set a header, replacing any header of the same name (the request's names are lower-case). */
function setHeader(request: OutgoingRequest, name: string, value: string): void {
  request.headers[name.toLowerCase()] = value;
}

/**
 * Configured headers (a secret's additionalHeaders, a proxy's additional headers). Names the
 * gateway manages (`Host`, framing, hop-by-hop) and invalid values are refused when saved; ones
 * stored before that rule are skipped here, so they can never reach the target.
 */
function setHeaders(request: OutgoingRequest, headers: Record<string, string> | undefined): void {
  for (const [name, value] of Object.entries(headers ?? {}))
    if (isSettableHeader(name, value)) setHeader(request, name, value);
}

/** application/json or any +json media type, UTF-8 (or no charset). */
export function isJsonContentType(contentType: string | undefined): boolean {
  if (!contentType) return false;
  const [mediaType = "", ...parameters] = contentType.toLowerCase().split(";");
  const type = mediaType.trim();
  if (type !== "application/json" && !/^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+\+json$/.test(type))
    return false;
  const charset = parameters
    .map((parameter) => parameter.trim())
    .find((parameter) => parameter.startsWith("charset="))
    ?.slice("charset=".length)
    .replaceAll('"', "");
  return charset === undefined || charset === "utf-8" || charset === "utf8";
}

const isPlainObject = (value: unknown): value is JsonObjectValue =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * Merge `data` into the JSON body (top-level keys, `data` wins) of a POST/PUT/PATCH request. An
 * empty body becomes `data` (content-type application/json unless another JSON type is set). A
 * body that is not a JSON object (other content type, invalid JSON, an array) is left untouched.
 */
function mergeBodyData(request: OutgoingRequest, data: JsonObjectValue | undefined): void {
  if (!data || Object.keys(data).length === 0) return;
  if (!BODY_METHODS.has(request.method.toUpperCase())) return;
  const contentType = request.headers["content-type"];
  let merged: JsonObjectValue;
  if (!request.body || request.body.length === 0) {
    if (contentType !== undefined && !isJsonContentType(contentType)) return;
    merged = { ...data };
    if (contentType === undefined) request.headers["content-type"] = "application/json";
  } else {
    if (!isJsonContentType(contentType)) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(request.body.toString("utf8"));
    } catch {
      return;
    }
    if (!isPlainObject(parsed)) return;
    merged = { ...parsed, ...data };
  }
  request.body = Buffer.from(JSON.stringify(merged), "utf8");
  if (request.headers["content-length"] !== undefined) {
    request.headers["content-length"] = String(request.body.length);
  }
}

/**
 * The proxy's additional headers, query parameters and body data (spec 2.7), with the same JSON
 * body rule. Call it BEFORE `applyTargetCredential`, so the credential wins over the proxy's
 * additions. Returns a new request.
 */
export function mergeProxyAdditions(
  request: OutgoingRequest,
  additions: {
    headers?: Record<string, string>;
    queryParams?: Record<string, string>;
    data?: JsonObjectValue;
  },
): OutgoingRequest {
  const next = cloneRequest(request);
  setHeaders(next, additions.headers);
  setQueryPairs(next.url, additions.queryParams);
  mergeBodyData(next, additions.data);
  return next;
}

const withPrefix = (prefix: string | undefined, value: string) => (prefix ? `${prefix} ${value}` : value);

function requireToken(authType: AuthType, options: ApplyOptions): string {
  const token = options.dynamicToken;
  if (!token)
    throw new CredentialApplicationError(`A ${authType} credential needs its current token to be applied`);
  return token;
}

/**
 * Apply a target credential to a request and return the new request (the input is not changed).
 * customToken and oauth2 need `options.dynamicToken`; jwtVerify is not a target auth type.
 */
export function applyTargetCredential(
  request: OutgoingRequest,
  authType: AuthType,
  secret: TargetSecret,
  options: ApplyOptions = {},
): OutgoingRequest {
  const next = cloneRequest(request);
  setHeaders(next, secret.additionalHeaders);
  setQueryPairs(next.url, secret.additionalQueryParams);

  switch (authType) {
    case "apiKey": {
      const { keyName, keyValue, placement, prefix } = secret as ApiKeySecret;
      if (placement === "query") setQueryPairs(next.url, { [keyName]: keyValue });
      else setHeader(next, keyName, withPrefix(prefix, keyValue));
      break;
    }
    case "bearer": {
      const { token, prefix } = secret as BearerSecret;
      setHeader(next, "authorization", withPrefix(prefix ?? "Bearer", token));
      break;
    }
    case "jwt": {
      const { token, prefix } = secret as JwtSecret;
      setHeader(next, "authorization", withPrefix(prefix, token));
      break;
    }
    case "basicAuth": {
      const { username, password } = secret as BasicAuthSecret;
      setHeader(
        next,
        "authorization",
        `Basic ${Buffer.from(`${username}:${password}`, "utf8").toString("base64")}`,
      );
      break;
    }
    case "custom":
      mergeBodyData(next, (secret as CustomSecret).data);
      break;
    case "none":
      break;
    case "customToken": {
      const { keyName, placement, prefix, additionalData } = secret as CustomTokenSecret;
      const token = requireToken(authType, options);
      mergeBodyData(next, additionalData);
      if (placement === "query") setQueryPairs(next.url, { [keyName ?? "Authorization"]: token });
      else setHeader(next, keyName ?? "Authorization", withPrefix(prefix, token));
      break;
    }
    case "oauth2":
      setHeader(next, "authorization", `Bearer ${requireToken(authType, options)}`);
      break;
    case "jwtVerify":
      throw new CredentialApplicationError(
        "A jwtVerify credential verifies callers; it cannot be applied to a target",
      );
    default: {
      const unknownType: never = authType;
      throw new CredentialApplicationError(`Unknown auth type ${String(unknownType)}`);
    }
  }
  return next;
}

/**
 * The caller's proxy credential in a request: the lower-case header names (`authorization` always)
 * and the query parameter names that carry it. The one definition used to strip it from the
 * outgoing request (stages/forward.ts) and from every view of the request given to predicates and
 * user code (meter-plan.ts predicateRequestOf).
 */
export function callerCredentialNames(credential?: {
  item: { credentialAuthType: string };
  secret: unknown;
}): {
  headers: Set<string>;
  query: string[];
} {
  const authType = credential?.item.credentialAuthType as AuthType;
  const secret = (credential?.secret ?? {}) as CredentialSecret;
  return {
    headers: new Set([...credentialHeaderNames(authType, secret), "authorization"]),
    query: credentialQueryParamNames(authType, secret),
  };
}

/**
 * Lower-case names of the headers that carry a credential's secret (its auth header and its
 * additionalHeaders), for redaction in request logs. For a proxy credential these are the headers
 * the caller presents.
 */
export function credentialHeaderNames(authType: AuthType, secret: CredentialSecret): string[] {
  const names = new Set(Object.keys(secret.additionalHeaders ?? {}).map((name) => name.toLowerCase()));
  switch (authType) {
    case "apiKey": {
      const { keyName, placement } = secret as ApiKeySecret;
      if (placement !== "query") names.add(keyName.toLowerCase());
      break;
    }
    case "customToken": {
      const { keyName, placement } = secret as CustomTokenSecret;
      if (placement !== "query") names.add((keyName ?? "Authorization").toLowerCase());
      break;
    }
    case "bearer":
    case "jwt":
    case "basicAuth":
    case "oauth2":
    case "jwtVerify":
      names.add("authorization");
      break;
    case "custom":
    case "none":
      break;
  }
  return [...names];
}

/** Names of the query parameters that carry a credential's secret, for redaction of logged URLs. */
export function credentialQueryParamNames(authType: AuthType, secret: CredentialSecret): string[] {
  const names = new Set(Object.keys(secret.additionalQueryParams ?? {}));
  if (authType === "apiKey" || authType === "customToken") {
    const { keyName, placement } = secret as ApiKeySecret | CustomTokenSecret;
    if (placement === "query" && keyName) names.add(keyName);
  }
  return [...names];
}
