/**
 * The MCP endpoint's authorization server over HTTP (docs/mcp-oauth.md): answers a web `Request`
 * whose path is one of OAUTH_PATHS, else undefined (the caller serves it otherwise). The issuer
 * and the MCP resource derive from the request's own origin. Handlers parse, call
 * lib/oauth/authorization-server.ts, and shape the answer.
 */
import { isServiceUnavailable } from "#lib/aws/clients.ts";
import {
  AUTH_IP_LIMIT_MESSAGE,
  checkPassword,
  countAuthRequest,
  INVALID_CREDENTIALS_MESSAGE,
  LOCKED_MESSAGE,
  NOT_VERIFIED_MESSAGE,
  sessionFromCookie,
} from "#lib/domain/accounts.ts";
import { describeError, log } from "#lib/log.ts";
import { DomainError } from "#lib/shared/errors.ts";
import {
  approveAuthorization,
  checkAuthorizationParams,
  exchangeAuthorizationCode,
  refreshGrant,
  registerClient,
  resolveClientAndRedirect,
  singleParams,
} from "./authorization-server.ts";
import { MAX_OAUTH_BODY_BYTES, parseClientRegistration } from "./client-metadata.ts";
import { type ConsentPageOptions, consentPage, errorPage, pageHeaders } from "./consent-page.ts";
import { OAuthError, oauthError } from "./errors.ts";
import {
  authorizationServerMetadata,
  endpointsOf,
  OAUTH_PATHS,
  protectedResourceMetadata,
} from "./metadata.ts";
import { registrationLimitsOf } from "./registration-limits.ts";

/** What the platform knows of the request besides the request itself. */
export interface OAuthRequestContext {
  /** The caller's address as the function URL saw it (`requestContext.http.sourceIp`). */
  sourceIp?: string;
}

type Endpoint = (
  request: Request,
  origin: { issuer: string; resource: string },
  context: OAuthRequestContext,
) => Promise<Response>;

/** Answers a browser-based client may read cross-origin (metadata, registration, token). */
const CORS_HEADERS = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
  "Access-Control-Allow-Headers": "Content-Type, Authorization, MCP-Protocol-Version",
  "Access-Control-Max-Age": "600",
  // A browser-based client may read when to try a limited registration again.
  "Access-Control-Expose-Headers": "Retry-After",
};

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), {
    status,
    headers: { "Content-Type": "application/json", ...CORS_HEADERS, ...headers },
  });

const NO_STORE = { "Cache-Control": "no-store", Pragma: "no-cache" };

/** A request body, bounded; throws `invalid_request` when it is larger or of another type. */
async function bodyOf(request: Request, contentType: string): Promise<string> {
  const type = request.headers.get("content-type")?.split(";")[0]?.trim().toLowerCase();
  if (type !== contentType) throw oauthError("invalid_request", `Content-Type: must be ${contentType}`);
  const declared = Number(request.headers.get("content-length") ?? 0);
  if (declared > MAX_OAUTH_BODY_BYTES) throw oauthError("invalid_request", "body: too large");
  const text = await request.text();
  if (Buffer.byteLength(text) > MAX_OAUTH_BODY_BYTES) throw oauthError("invalid_request", "body: too large");
  return text;
}

const formOf = async (request: Request) =>
  singleParams(new URLSearchParams(await bodyOf(request, "application/x-www-form-urlencoded")));

// ---- endpoints ----

const protectedResource: Endpoint = async (_request, { issuer }) =>
  json(200, protectedResourceMetadata(issuer), { "Cache-Control": "max-age=300" });

const authorizationServer: Endpoint = async (_request, { issuer }) =>
  json(200, authorizationServerMetadata(issuer), { "Cache-Control": "max-age=300" });

const register: Endpoint = async (request, _origin, { sourceIp }) => {
  const text = await bodyOf(request, "application/json");
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw oauthError("invalid_client_metadata", "The body must be JSON");
  }
  const registration = parseClientRegistration(body);
  return json(
    201,
    await registerClient(registration, { sourceIp, limits: registrationLimitsOf(process.env) }),
    NO_STORE,
  );
};

const token: Endpoint = async (request, { resource }) => {
  const params = await formOf(request);
  const grantType = params.get("grant_type");
  if (grantType === "authorization_code")
    return json(200, await exchangeAuthorizationCode(params, resource), NO_STORE);
  if (grantType === "refresh_token") return json(200, await refreshGrant(params, resource), NO_STORE);
  if (!grantType) throw oauthError("invalid_request", "grant_type: required");
  throw oauthError("unsupported_grant_type", "grant_type: authorization_code or refresh_token");
};

/** A 303 (the answer to the consent form) back to the client's registered redirect URI with the answer's parameters. */
function redirectTo(redirectUri: string, status: 303, answer: Record<string, string | undefined>): Response {
  const location = new URL(redirectUri);
  for (const [name, value] of Object.entries(answer))
    if (value !== undefined) location.searchParams.set(name, value);
  return new Response(null, { status, headers: { Location: location.href, ...NO_STORE } });
}

const htmlPage = (status: number, html: string, redirectOrigin?: string) =>
  new Response(html, { status, headers: pageHeaders(redirectOrigin) });

/** An authorization error shown on this server's page (400), never redirected. */
const errorAnswer = (error: OAuthError) => htmlPage(400, errorPage(error.code, error.message));

/**
 * GET shows the consent page; POST (form) approves or denies. Only the user's answer on the
 * consent page is redirected to the client (the code, or access_denied after Deny); every error in
 * the request itself is an error page here, whether or not the client and the redirect URI are
 * registered: anyone may register any https URI, so redirecting an error before the user has
 * interacted would make this server an open redirector (RFC 9700 4.11.2, RFC 6749 4.1.2.1).
 */
const authorize: Endpoint = async (request, { issuer, resource }, { sourceIp }) => {
  const isPost = request.method === "POST";
  // Anti-forgery of the form (besides SameSite=Lax on the session cookie, the CSP's form-action
  // and frame-ancestors): a POST must come from this server's own page.
  if (isPost && !sameOriginPost(request, issuer))
    return htmlPage(
      403,
      errorPage("access_denied", "The consent form must be sent from this server's own page"),
    );
  let params: Map<string, string>;
  let authorization: Awaited<ReturnType<typeof resolveClientAndRedirect>> &
    ReturnType<typeof checkAuthorizationParams>;
  try {
    params = isPost ? await formOf(request) : singleParams(new URL(request.url).searchParams);
    const target = await resolveClientAndRedirect(params);
    authorization = { ...target, ...checkAuthorizationParams(params, resource) };
  } catch (error) {
    if (error instanceof OAuthError) return errorAnswer(error);
    throw error;
  }
  const redirectUri = authorization.redirectUri;
  const redirectOrigin = new URL(redirectUri).origin;
  const authorizeUrl = `${issuer}${OAUTH_PATHS.authorize}`;
  const email = params.get("email")?.trim() ?? "";
  const password = params.get("password") ?? "";
  const withPassword = isPost && (email !== "" || password !== "");
  // The console session's user, unless the form was filled in (then only the password counts).
  const session = withPassword
    ? undefined
    : await sessionFromCookie(request.headers.get("cookie") ?? undefined);
  const signedInAs = session?.user.userEmail;
  const again = (
    status: number,
    error: ConsentPageOptions["error"],
    headers: Record<string, string> = {},
  ) => {
    const answer = htmlPage(
      status,
      consentPage(authorization, params, { authorizeUrl, signedInAs, email, error }),
      redirectOrigin,
    );
    for (const [name, value] of Object.entries(headers)) answer.headers.set(name, value);
    return answer;
  };
  if (!isPost) return again(200, undefined);
  if (params.get("consent") !== "approve")
    return redirectTo(redirectUri, 303, {
      error: "access_denied",
      error_description: "The user denied the request",
      state: authorization.state,
      iss: issuer,
    });
  let userId: string;
  if (withPassword) {
    if (!email) return again(400, { message: "Enter your email address", field: "email" });
    // A password attempt counts on the same per-IP limit as /auth/sign-in (and checkPassword on the
    // same per-address lockout): the consent page is no way around either.
    const counted = await countAuthRequest(sourceIp);
    if (counted.limited)
      return again(
        429,
        { message: AUTH_IP_LIMIT_MESSAGE },
        { "Retry-After": String(counted.retryAfterSeconds) },
      );
    const checked = await checkPassword(email, password);
    if (checked.kind === "locked")
      return again(429, { message: LOCKED_MESSAGE }, { "Retry-After": String(checked.retryAfterSeconds) });
    if (checked.kind === "notVerified") return again(403, { message: NOT_VERIFIED_MESSAGE, field: "email" });
    if (checked.kind === "invalid")
      return again(401, { message: INVALID_CREDENTIALS_MESSAGE, field: "password" });
    // An account scheduled for deletion approves nothing (docs/accounts.md#recovery-ends-every-way-in): its grace period keeps the
    // data, not the access; signing in to the console with the password offers to cancel it.
    if (checked.user.userStatus === "pendingDeletion")
      return again(409, {
        message: `This account is scheduled for deletion on ${checked.user.userDeletionScheduledAt}; sign in to the console to cancel the deletion first`,
      });
    userId = checked.user.userId;
  } else if (session) {
    userId = session.user.userId;
  } else {
    return again(401, { message: "Enter your email address and password", field: "email" });
  }
  let code: string;
  try {
    code = await approveAuthorization(authorization, userId, session?.session.secretHash);
  } catch (error) {
    if (error instanceof OAuthError) return errorAnswer(error);
    // The most API tokens a user may hold: the page says so (revoke one, then approve again).
    // The session was revoked while the approval ran (a reset, a password change: docs/accounts.md#recovery-ends-every-way-in).
    if (error instanceof DomainError && error.kind === "forbidden")
      return again(401, { message: "Enter your email address and password", field: "email" });
    if (error instanceof DomainError && error.kind === "validation")
      return again(400, { message: error.message });
    throw error;
  }
  return redirectTo(redirectUri, 303, { code, state: authorization.state, iss: issuer });
};

/**
 * Whether a POST to the authorization endpoint comes from this server's own page: its `Origin`,
 * when the browser sends one, is the issuer's, and `Sec-Fetch-Site`, when sent, is same-origin
 * (or none: typed by the user). Clients without either header (not browsers) pass: they cannot
 * carry a victim's session cookie anyway.
 */
function sameOriginPost(request: Request, issuer: string): boolean {
  const origin = request.headers.get("origin");
  if (origin !== null && origin !== new URL(issuer).origin) return false;
  const site = request.headers.get("sec-fetch-site");
  return site === null || site === "same-origin" || site === "none";
}

const ROUTES: Record<string, { methods: string[]; endpoint: Endpoint; cors: boolean }> = {
  [OAUTH_PATHS.protectedResource]: { methods: ["GET"], endpoint: protectedResource, cors: true },
  [OAUTH_PATHS.protectedResourceOfMcp]: { methods: ["GET"], endpoint: protectedResource, cors: true },
  [OAUTH_PATHS.authorizationServer]: { methods: ["GET"], endpoint: authorizationServer, cors: true },
  [OAUTH_PATHS.register]: { methods: ["POST"], endpoint: register, cors: true },
  [OAUTH_PATHS.token]: { methods: ["POST"], endpoint: token, cors: true },
  [OAUTH_PATHS.authorize]: { methods: ["GET", "POST"], endpoint: authorize, cors: false },
};

/** The answer to a request for one of the authorization server's paths, or undefined for any other path. */
export async function handleOAuthRequest(
  request: Request,
  context: OAuthRequestContext = {},
): Promise<Response | undefined> {
  const url = new URL(request.url);
  const route = ROUTES[url.pathname];
  if (!route) return undefined;
  if (request.method === "OPTIONS" && route.cors)
    return new Response(null, { status: 204, headers: CORS_HEADERS });
  if (!route.methods.includes(request.method))
    return json(
      405,
      { error: "invalid_request", error_description: `method: use ${route.methods.join(" or ")}` },
      {
        Allow: route.methods.join(", "),
      },
    );
  try {
    return await route.endpoint(request, endpointsOf(request.url), context);
  } catch (error) {
    if (error instanceof OAuthError) {
      const { status, retryAfterSeconds } = error.answer;
      return json(status ?? (error.code === "invalid_client" ? 401 : 400), error.toJSON(), {
        ...NO_STORE,
        ...(retryAfterSeconds === undefined ? {} : { "Retry-After": String(retryAfterSeconds) }),
      });
    }
    if (isServiceUnavailable(error)) {
      log.warn("OAuth request: a service is unavailable", { path: url.pathname, ...describeError(error) });
      return json(
        503,
        { error: "temporarily_unavailable", error_description: "Try again shortly" },
        {
          ...NO_STORE,
          "Retry-After": "1",
        },
      );
    }
    log.error("OAuth request failed", { path: url.pathname, ...describeError(error) });
    return json(500, { error: "server_error", error_description: "Internal error" }, NO_STORE);
  }
}
