/**
 * Accounts (issue 21, docs/accounts.md): sign-up, e-mail verification, sign-in sessions and
 * password reset. Public routes (no `Authorization`); the session travels in an HttpOnly cookie.
 * Not MCP tools: the spec keeps passwords in the web UI (lib/mcp/tools.ts leaves public routes out).
 */
import type middy from "@middy/core";
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from "aws-lambda";
import { z } from "zod";
import { access, MessageResponse, operation, pathParams, wrapped } from "#lib/api/operation.ts";
import {
  AUTH_IP_LIMIT_MESSAGE,
  CHANGED_MESSAGE,
  changePassword,
  countAuthRequest,
  DEVICE_SECONDS,
  deviceCookieName,
  FORGOT_MESSAGE,
  forgotPassword,
  INVALID_CODE_MESSAGE,
  INVALID_CREDENTIALS_MESSAGE,
  LOCKED_MESSAGE,
  listUserSessions,
  NOT_VERIFIED_MESSAGE,
  RESEND_MESSAGE,
  RESET_MESSAGE,
  resendVerification,
  revokeUserSession,
  SIGN_UP_MESSAGE,
  SIGNED_IN_MESSAGE,
  SIGNED_OUT_MESSAGE,
  scheduledForDeletionMessage,
  sessionCookieName,
  sessionFromCookie,
  signIn,
  signOut,
  signUp,
  toApiSession,
  VERIFIED_MESSAGE,
  verifyEmail,
} from "#lib/domain/accounts.ts";
import { completePasswordReset } from "#lib/domain/recovery.ts";
import { toApiUser } from "#lib/domain/users.ts";
import { HttpError } from "#lib/http/errors.ts";
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from "#lib/shared/password-policy.ts";
import { UserSchema } from "./users.ts";

const Email = z.string().trim().toLowerCase().email().max(254);
/** Length in characters (code points), not UTF-16 units. */
export const Password = z
  .string()
  .refine((value) => [...value].length >= PASSWORD_MIN_LENGTH, {
    message: `must be at least ${PASSWORD_MIN_LENGTH} characters`,
  })
  .refine((value) => [...value].length <= PASSWORD_MAX_LENGTH, {
    message: `must be at most ${PASSWORD_MAX_LENGTH} characters`,
  });
const Name = z.string().trim().min(1).max(100);
const Code = z.string().trim().min(1).max(32);

const SignUpBody = z.object({ email: Email, password: Password, firstName: Name, lastName: Name });
const EmailBody = z.object({ email: Email });
const VerifyBody = z.object({ email: Email, code: Code });
const ResetBody = z.object({ email: Email, code: Code, password: Password });
/** Any string: a wrong password of the wrong length is a wrong password (401), not a validation error. */
const SignInBody = z.object({
  email: Email,
  password: z.string().max(1024),
  cancelDeletion: z
    .boolean()
    .optional()
    .describe(
      "Cancel the account's scheduled deletion and sign in; without it, the right password of an account scheduled for deletion is a 409",
    ),
});
const ChangePasswordBody = z.object({
  currentPassword: z.string().max(1024).describe("The password the user signs in with now"),
  newPassword: Password.describe("The new password: 12 to 256 characters, not a common one"),
  signOutOtherSessions: z
    .boolean()
    .default(true)
    .describe(
      "Sign out every other session and revoke every API token and MCP grant of the user (default true); the current session stays",
    ),
});

/** A passkey as answered (the routes of lib/api/operations/passkeys.ts, and the reset's list). */
export const PasskeySchema = z.object({
  passkeyId: z.string().describe("The passkey's id (SHA-256 of its credential id, base64url)"),
  passkeyName: z.string().describe("The name its owner gave it"),
  passkeyCreated: z.string().describe("When it was added (ISO 8601)"),
  passkeyLastUsed: z.string().nullable().describe("When it last signed in (ISO 8601); null while never used"),
  passkeySynced: z
    .boolean()
    .describe("Whether the authenticator said it is backed up (a synced passkey, on more than one device)"),
});
const RevokedSchema = z
  .object({
    sessions: z.number().int().describe("Sessions signed out"),
    tokens: z.number().int().describe("API tokens revoked"),
    grants: z.number().int().describe("MCP OAuth grants revoked (their refresh and access tokens)"),
  })
  .describe("What was revoked");
const ResetAnswer = z.object({
  message: z.string(),
  revoked: RevokedSchema,
  passkeys: z
    .array(PasskeySchema)
    .describe(
      "The user's passkeys (a reset does not remove them): remove any not recognised with recoveryToken",
    ),
  recoveryToken: z
    .string()
    .describe(
      "Shown once: lets its holder remove this user's passkeys (POST /auth/passkeys/remove) for 24 hours, and nothing else",
    ),
});
const ChangeAnswer = z.object({ message: z.string(), revoked: RevokedSchema });

const Users = wrapped("users", UserSchema);
const SessionSchema = z.object({
  sessionId: z.string(),
  sessionCreated: z.string(),
  sessionLastSeen: z.string(),
  sessionIdleExpires: z.string(),
  sessionExpires: z.string(),
  userAgent: z.string(),
  current: z.boolean(),
});
const NOT_SIGNED_IN = "Not signed in";
const SessionUsers = z.object({ users: z.array(UserSchema) });

const invalidCode = () => new HttpError(400, INVALID_CODE_MESSAGE);
/** The 409 of a sign-in (password or passkey) of an account scheduled for deletion. */
export const scheduledForDeletion = (userDeletionScheduledAt: string) =>
  new HttpError(409, scheduledForDeletionMessage(userDeletionScheduledAt), {
    body: { userDeletionScheduledAt },
  });
const unauthorized = (message: string) => new HttpError(401, message);

const isSecure = (baseUrl: string) => baseUrl.startsWith("https://");

/** The session cookie: HttpOnly, SameSite=Lax, Path=/, and Secure with the `__Host-` prefix over https. */
export function sessionCookie(baseUrl: string, value: string, maxAgeSeconds: number): string {
  return cookie(baseUrl, sessionCookieName, value, maxAgeSeconds);
}

function cookie(
  baseUrl: string,
  nameOf: (secure: boolean) => string,
  value: string,
  maxAgeSeconds: number,
): string {
  const secure = isSecure(baseUrl);
  return [
    `${nameOf(secure)}=${value}`,
    "Path=/",
    `Max-Age=${maxAgeSeconds}`,
    "HttpOnly",
    "SameSite=Lax",
    ...(secure ? ["Secure"] : []),
  ].join("; ");
}

export const NO_STORE = { "Cache-Control": "no-store" };

/**
 * Several cookies of one answer travel in its `Set-Cookie` header joined by newlines (a newline is
 * never part of a header value); the auth function's middleware sends them as separate headers.
 */
const COOKIE_SEPARATOR = "\n";

export { AUTH_IP_LIMIT_MESSAGE };

/**
 * The middleware of the `auth` function (functions/auth.ts), for every `/auth/*` route in one place:
 * - the per-IP limit: each request counts one on `IP#<sourceIp>` in its UTC minute
 *   (AUTH_REQUESTS_PER_IP_PER_MINUTE, default 300), 429 with `Retry-After` beyond; the MCP consent
 *   page's password attempts count on the same (countAuthRequest, lib/domain/accounts.ts);
 * - several `Set-Cookie` values of an answer (session and device cookie) as separate headers.
 */
export const authGroupMiddleware = (): middy.MiddlewareObj<APIGatewayProxyEvent, APIGatewayProxyResult> => ({
  before: async (request) => {
    const decision = await countAuthRequest(request.event.requestContext?.identity?.sourceIp);
    if (decision.limited)
      throw new HttpError(429, AUTH_IP_LIMIT_MESSAGE, {
        body: { retryAfter: decision.retryAfterSeconds },
        headers: { "Retry-After": String(decision.retryAfterSeconds) },
      });
  },
  after: async (request) => {
    const response = request.response;
    const setCookie = response?.headers?.["Set-Cookie"];
    if (!response || typeof setCookie !== "string" || !setCookie.includes(COOKIE_SEPARATOR)) return;
    const { "Set-Cookie": _joined, ...headers } = response.headers ?? {};
    response.headers = headers;
    response.multiValueHeaders = {
      ...response.multiValueHeaders,
      "Set-Cookie": setCookie.split(COOKIE_SEPARATOR),
    };
  },
});

const routes = [
  operation({
    id: "signUp",
    method: "POST",
    path: "/auth/sign-up",
    group: "auth",
    summary: "Sign up",
    description:
      "Open an account with an e-mail address and a password (12 to 256 characters, and not a common or easily guessed one, nor one built from the address or names: a 400 naming `password` says why). Answers 201 with the same message whether or not the address already has an account; the address receives a 6-digit verification code and a link (or, when it has an account, an e-mail saying so).",
    access: access.public,
    effect: "write",
    body: SignUpBody,
    response: { status: 201, schema: MessageResponse },
    handler: async ({ body }) => {
      await signUp(body);
      return { body: { message: SIGN_UP_MESSAGE } };
    },
  }),
  operation({
    id: "verifyEmail",
    method: "POST",
    path: "/auth/verify-email",
    group: "auth",
    summary: "Verify an e-mail address",
    description:
      "Verify the address with the 6-digit code of its verification e-mail. A wrong, used or expired code is a 400; after 5 wrong codes the code is void.",
    access: access.public,
    effect: "write",
    body: VerifyBody,
    response: { status: 200, schema: MessageResponse },
    handler: async ({ body }) => {
      if (!(await verifyEmail(body))) throw invalidCode();
      return { body: { message: VERIFIED_MESSAGE } };
    },
  }),
  operation({
    id: "resendVerification",
    method: "POST",
    path: "/auth/resend-verification",
    group: "auth",
    summary: "Send a new verification code",
    description:
      "Send a new verification code to an address whose account waits for verification. The same answer for any address.",
    access: access.public,
    effect: "write",
    body: EmailBody,
    response: { status: 200, schema: MessageResponse },
    handler: async ({ body }) => {
      await resendVerification(body.email);
      return { body: { message: RESEND_MESSAGE } };
    },
  }),
  operation({
    id: "signIn",
    method: "POST",
    path: "/auth/sign-in",
    group: "auth",
    summary: "Sign in",
    description:
      "Sign in with e-mail and password: answers the user and sets the session cookie (HttpOnly, SameSite=Lax). 401 for a wrong address or password, 403 for an address not verified yet, 409 `{message, userDeletionScheduledAt}` for the right password of an account scheduled for deletion (no session; `cancelDeletion: true` cancels the deletion and signs in), 429 with Retry-After once 5 sign-ins of the address failed within 15 minutes, until that window ends.",
    access: access.public,
    effect: "write",
    body: SignInBody,
    response: { status: 200, schema: Users },
    errors: [403, 409],
    handler: async ({ body, baseUrl, headers }) => {
      const result = await signIn({
        ...body,
        userAgent: headers["user-agent"],
        cookieHeader: headers.cookie,
      });
      switch (result.kind) {
        case "locked":
          throw new HttpError(429, LOCKED_MESSAGE, {
            body: { retryAfter: result.retryAfterSeconds },
            headers: { "Retry-After": String(result.retryAfterSeconds) },
          });
        case "invalid":
          throw unauthorized(INVALID_CREDENTIALS_MESSAGE);
        case "notVerified":
          throw new HttpError(403, NOT_VERIFIED_MESSAGE);
        case "scheduledForDeletion":
          throw scheduledForDeletion(result.userDeletionScheduledAt);
        case "signedIn":
          return {
            body: { message: SIGNED_IN_MESSAGE, users: [toApiUser(result.user)] },
            headers: {
              ...NO_STORE,
              "Set-Cookie": [
                sessionCookie(baseUrl, result.cookieValue, result.maxAgeSeconds),
                cookie(baseUrl, deviceCookieName, result.deviceCookieValue, DEVICE_SECONDS),
              ].join(COOKIE_SEPARATOR),
            },
          };
      }
    },
  }),
  operation({
    id: "getSession",
    method: "GET",
    path: "/auth/session",
    group: "auth",
    summary: "Get the signed-in user",
    description: "The user of the request's session cookie; 401 without a valid session.",
    access: access.public,
    effect: "read",
    response: { status: 200, schema: SessionUsers },
    handler: async ({ headers }) => {
      const signedIn = await sessionFromCookie(headers.cookie);
      if (!signedIn) throw unauthorized(NOT_SIGNED_IN);
      return { body: { users: [toApiUser(signedIn.user)] }, headers: NO_STORE };
    },
  }),
  operation({
    id: "signOut",
    method: "POST",
    path: "/auth/sign-out",
    group: "auth",
    summary: "Sign out",
    description: "Revoke the request's session on the server and clear its cookie.",
    access: access.public,
    effect: "delete",
    response: { status: 200, schema: MessageResponse },
    handler: async ({ headers, baseUrl }) => {
      await signOut(headers.cookie);
      return {
        body: { message: SIGNED_OUT_MESSAGE },
        headers: { ...NO_STORE, "Set-Cookie": sessionCookie(baseUrl, "", 0) },
      };
    },
  }),
  operation({
    id: "listSessions",
    method: "GET",
    path: "/auth/sessions",
    group: "auth",
    summary: "List my sessions",
    description:
      "The signed-in user's sessions (one per browser signed in), newest first, the request's own marked `current`; 401 without a valid session cookie.",
    access: access.public,
    effect: "read",
    response: { status: 200, schema: wrapped("sessions", SessionSchema) },
    handler: async ({ headers }) => {
      const signedIn = await sessionFromCookie(headers.cookie);
      if (!signedIn) throw unauthorized(NOT_SIGNED_IN);
      const sessions = await listUserSessions(signedIn.user.userId);
      return {
        body: {
          message: "Sessions",
          sessions: sessions.map((session) => toApiSession(session, signedIn.session)),
        },
        headers: NO_STORE,
      };
    },
  }),
  operation({
    id: "revokeSession",
    method: "DELETE",
    path: "/auth/sessions/{sessionId}",
    group: "auth",
    summary: "Revoke one of my sessions",
    description:
      "Sign one of the signed-in user's sessions out (another browser, or this one). 404 for a session that is not the user's; 401 without a valid session cookie.",
    access: access.public,
    effect: "delete",
    params: pathParams("sessionId"),
    response: { status: 200, schema: MessageResponse },
    errors: [404],
    handler: async ({ headers, params }) => {
      const signedIn = await sessionFromCookie(headers.cookie);
      if (!signedIn) throw unauthorized(NOT_SIGNED_IN);
      if (!(await revokeUserSession(signedIn.user.userId, params.sessionId)))
        throw new HttpError(404, "Session not found");
      return { body: { message: "Session revoked" }, headers: NO_STORE };
    },
  }),
  operation({
    id: "forgotPassword",
    method: "POST",
    path: "/auth/forgot-password",
    group: "auth",
    summary: "Ask for a password reset code",
    description:
      "Send a 6-digit password reset code and a link to the address, when it has an account. The same answer for any address.",
    access: access.public,
    effect: "write",
    body: EmailBody,
    response: { status: 200, schema: MessageResponse },
    handler: async ({ body }) => {
      await forgotPassword(body.email);
      return { body: { message: FORGOT_MESSAGE } };
    },
  }),
  operation({
    id: "resetPassword",
    method: "POST",
    path: "/auth/reset-password",
    group: "auth",
    summary: "Reset the password",
    description:
      "Set a new password with the code of the reset e-mail: every session, API token and MCP OAuth grant of the user is revoked (`revoked` counts them). Passkeys are kept but listed, with `recoveryToken` (shown once, good for 24 hours) to remove any of them with POST /auth/passkeys/remove; the e-mail 'Your password was changed' says the same, with a removal link per passkey. A wrong, used or expired code is a 400; so is a common or easily guessed password (naming `password`; the code stays usable).",
    access: access.public,
    effect: "write",
    body: ResetBody,
    response: { status: 200, schema: ResetAnswer },
    handler: async ({ body }) => {
      const completed = await completePasswordReset(body);
      if (!completed) throw invalidCode();
      return { body: { message: RESET_MESSAGE, ...completed }, headers: NO_STORE };
    },
  }),
  operation({
    id: "changePassword",
    method: "POST",
    path: "/auth/change-password",
    group: "auth",
    summary: "Change my password",
    description:
      "Change the signed-in user's password (session cookie). A wrong `currentPassword` is a 400 naming it and counts as a failed sign-in of the address (429 with Retry-After while locked, as sign-in); `newPassword` follows sign-up's rules (400 naming it). With `signOutOtherSessions` (default true) every other session, API token and MCP OAuth grant of the user is revoked; the current session stays. 401 without a valid session cookie.",
    access: access.public,
    effect: "write",
    body: ChangePasswordBody,
    response: { status: 200, schema: ChangeAnswer },
    errors: [409],
    handler: async ({ headers, body }) => {
      const signedIn = await sessionFromCookie(headers.cookie);
      if (!signedIn) throw unauthorized(NOT_SIGNED_IN);
      const result = await changePassword(signedIn, body);
      if (result.kind === "locked")
        throw new HttpError(429, LOCKED_MESSAGE, {
          body: { retryAfter: result.retryAfterSeconds },
          headers: { "Retry-After": String(result.retryAfterSeconds) },
        });
      return { body: { message: CHANGED_MESSAGE, revoked: result.revoked }, headers: NO_STORE };
    },
  }),
];

/**
 * The errors every `/auth` route may answer besides its own: 429 (the per-IP limit), 400 for a
 * malformed body, 401 where the route needs a session or a password.
 */
const SESSION_ROUTES = new Set(["signIn", "getSession", "listSessions", "revokeSession", "changePassword"]);
export const authOperations = routes.map((route) => ({
  ...route,
  errors: [
    ...new Set([
      ...(route.body ? [400] : []),
      ...(SESSION_ROUTES.has(route.id) ? [401] : []),
      ...route.errors,
      429,
    ]),
  ].sort((a, b) => a - b),
}));
