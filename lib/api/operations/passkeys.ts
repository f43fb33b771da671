/**
 * Passkeys (issue 22, docs/accounts.md "Passkeys"): register one while signed in, sign in with a
 * discoverable one, list and remove them. Public routes in API Gateway terms (no `Authorization`);
 * the handlers that need a signed-in user read the session cookie themselves, as /auth/sessions
 * does. Not MCP tools (lib/mcp/tools.ts leaves public routes out): they are browser ceremonies.
 */
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from "@simplewebauthn/server";
import { z } from "zod";
import { access, MessageResponse, operation, pathParams, wrapped } from "#lib/api/operation.ts";
import { SIGNED_IN_MESSAGE, sessionFromCookie } from "#lib/domain/accounts.ts";
import {
  authenticationOptions,
  CHALLENGE_LIFETIME_SECONDS,
  LAST_WAY_IN_MESSAGE,
  listUserPasskeys,
  MAX_PASSKEYS_PER_USER,
  NOT_RECOGNISED_MESSAGE,
  PASSKEY_NAME_MAX_LENGTH,
  registerPasskey,
  registrationOptions,
  removeUserPasskey,
  signInWithPasskey,
  toApiPasskey,
} from "#lib/domain/passkeys.ts";
import {
  INVALID_LINK_MESSAGE,
  PASSKEY_REMOVED_MESSAGE,
  removePasskeyWithRecoveryToken,
} from "#lib/domain/recovery.ts";
import { toApiUser } from "#lib/domain/users.ts";
import { HttpError } from "#lib/http/errors.ts";
import { NO_STORE, PasskeySchema, scheduledForDeletion, sessionCookie } from "./auth.ts";
import { UserSchema } from "./users.ts";

const NOT_SIGNED_IN = "Not signed in";

async function signedInUser(cookie: string | undefined) {
  const signedIn = await sessionFromCookie(cookie);
  if (!signedIn) throw new HttpError(401, NOT_SIGNED_IN);
  return signedIn.user;
}

// ---- WebAuthn JSON (the shapes of @simplewebauthn/browser's startRegistration / startAuthentication) ----

const Base64Url = z
  .string()
  .max(65_536)
  .regex(/^[A-Za-z0-9_-]*={0,2}$/, "must be base64url");
/** `usb`, `nfc`, `ble`, `internal`, `hybrid`, ...: a string, so a transport a browser adds later is kept, not refused. */
const Transport = z.string().max(32);
const AuthenticatorAttachment = z.enum(["platform", "cross-platform"]);
const UserVerification = z.enum(["required", "preferred", "discouraged"]);
const Hint = z.enum(["hybrid", "security-key", "client-device"]);
const CredentialDescriptor = z.object({
  id: z.string(),
  /** `public-key` (a string in @simplewebauthn's types, which the console passes on as they are). */
  type: z.string(),
  transports: z.array(Transport).optional(),
});
const ChallengeId = z
  .string()
  .describe(
    `The id of the options' challenge, sent back with the browser's response (single use, ${CHALLENGE_LIFETIME_SECONDS / 60} minutes)`,
  );

const RegistrationOptionsSchema = z
  .object({
    challenge: z.string(),
    rp: z.object({ name: z.string(), id: z.string().optional() }),
    user: z.object({ id: z.string(), name: z.string(), displayName: z.string() }),
    pubKeyCredParams: z.array(z.object({ alg: z.number().int(), type: z.literal("public-key") })),
    timeout: z.number().int().optional(),
    excludeCredentials: z.array(CredentialDescriptor).optional(),
    authenticatorSelection: z
      .object({
        authenticatorAttachment: AuthenticatorAttachment.optional(),
        residentKey: z.enum(["required", "preferred", "discouraged"]).optional(),
        requireResidentKey: z.boolean().optional(),
        userVerification: UserVerification.optional(),
      })
      .optional(),
    attestation: z.enum(["none", "indirect", "direct", "enterprise"]).optional(),
    extensions: z.object({ credProps: z.boolean().optional() }).optional(),
    hints: z.array(Hint).optional(),
  })
  .describe("PublicKeyCredentialCreationOptionsJSON: give it to startRegistration({optionsJSON})");

const AuthenticationOptionsSchema = z
  .object({
    challenge: z.string(),
    timeout: z.number().int().optional(),
    rpId: z.string().optional(),
    allowCredentials: z.array(CredentialDescriptor).optional(),
    userVerification: UserVerification.optional(),
    hints: z.array(Hint).optional(),
  })
  .describe("PublicKeyCredentialRequestOptionsJSON: give it to startAuthentication({optionsJSON})");

const ClientExtensionResults = z.record(z.string(), z.unknown()).default({});

const RegistrationResponse = z
  .object({
    id: Base64Url,
    rawId: Base64Url,
    type: z.literal("public-key"),
    response: z.object({
      clientDataJSON: Base64Url,
      attestationObject: Base64Url,
      authenticatorData: Base64Url.optional(),
      transports: z.array(Transport).optional(),
      publicKeyAlgorithm: z.number().int().optional(),
      publicKey: Base64Url.optional(),
    }),
    authenticatorAttachment: AuthenticatorAttachment.optional(),
    clientExtensionResults: ClientExtensionResults,
  })
  .describe("RegistrationResponseJSON: what startRegistration answered");

const AuthenticationResponse = z
  .object({
    id: Base64Url,
    rawId: Base64Url,
    type: z.literal("public-key"),
    response: z.object({
      clientDataJSON: Base64Url,
      authenticatorData: Base64Url,
      signature: Base64Url,
      userHandle: Base64Url.optional(),
    }),
    authenticatorAttachment: AuthenticatorAttachment.optional(),
    clientExtensionResults: ClientExtensionResults,
  })
  .describe("AuthenticationResponseJSON: what startAuthentication answered");

const Passkeys = wrapped("passkeys", PasskeySchema);
const RemoveWithTokenBody = z.object({
  email: z.string().trim().toLowerCase().max(254).describe("The address of the account (from the link)"),
  passkeyId: z.string().max(64).describe("The passkey's id (from the link)"),
  recoveryToken: z.string().max(128).describe("The reset's recovery token (the link's `token`)"),
});

const RegisterBody = z.object({
  challengeId: z.string().max(64),
  response: RegistrationResponse,
  name: z.string().trim().max(PASSKEY_NAME_MAX_LENGTH).optional(),
});
const SignInBody = z.object({ challengeId: z.string().max(64), response: AuthenticationResponse });

export const passkeyOperations = [
  operation({
    id: "passkeyRegistrationOptions",
    method: "POST",
    path: "/auth/passkeys/registration-options",
    group: "auth",
    summary: "Start adding a passkey",
    description: `Options for the browser to create a passkey for the signed-in user (a discoverable credential, user verification preferred, no attestation; the user's passkeys excluded), and the challenge's id to send back with the response. 401 without a valid session cookie; 409 when the user has ${MAX_PASSKEYS_PER_USER} passkeys.`,
    access: access.public,
    effect: "write",
    response: {
      status: 200,
      schema: z.object({ message: z.string(), challengeId: ChallengeId, options: RegistrationOptionsSchema }),
    },
    errors: [409],
    handler: async ({ headers }) => {
      const user = await signedInUser(headers.cookie);
      const { challengeId, options } = await registrationOptions(user);
      return {
        body: { message: "Passkey registration options", challengeId, options },
        headers: NO_STORE,
      };
    },
  }),
  operation({
    id: "registerPasskey",
    method: "POST",
    path: "/auth/passkeys/registration",
    group: "auth",
    summary: "Add a passkey",
    description: `Add the passkey the browser created (the response of startRegistration) with the challenge of registration-options, used once: checked against the challenge, the origin and the relying-party id. Answers 201 with the user's passkeys. 400 for a used, expired or foreign challenge or a response that does not verify; 401 without a valid session cookie; 409 when the passkey is registered already or the user has ${MAX_PASSKEYS_PER_USER}.`,
    access: access.public,
    effect: "write",
    body: RegisterBody,
    response: { status: 201, schema: Passkeys },
    errors: [409],
    handler: async ({ headers, body }) => {
      const user = await signedInUser(headers.cookie);
      const passkeys = await registerPasskey(user, {
        challengeId: body.challengeId,
        response: body.response as RegistrationResponseJSON,
        name: body.name,
      });
      return { body: { message: "Passkey added", passkeys: passkeys.map(toApiPasskey) }, headers: NO_STORE };
    },
  }),
  operation({
    id: "passkeyAuthenticationOptions",
    method: "POST",
    path: "/auth/passkeys/authentication-options",
    group: "auth",
    summary: "Start signing in with a passkey",
    description:
      "Options for the browser to sign in with a discoverable passkey (no e-mail address needed), and the challenge's id to send back with the response.",
    access: access.public,
    effect: "write",
    response: {
      status: 200,
      schema: z.object({
        message: z.string(),
        challengeId: ChallengeId,
        options: AuthenticationOptionsSchema,
      }),
    },
    handler: async () => {
      const { challengeId, options } = await authenticationOptions();
      return {
        body: { message: "Passkey sign-in options", challengeId, options },
        headers: NO_STORE,
      };
    },
  }),
  operation({
    id: "signInWithPasskey",
    method: "POST",
    path: "/auth/passkeys/authentication",
    group: "auth",
    summary: "Sign in with a passkey",
    description:
      "Sign in with the response of startAuthentication and the challenge of authentication-options, used once: answers the user and sets the session cookie, as sign-in does. 400 for a used or expired challenge; 401 for a passkey that is not registered, a signature, origin or relying-party id that does not verify, or a signature counter that went back; 409 `{message, userDeletionScheduledAt}` for an account scheduled for deletion (no session: sign in with the password and `cancelDeletion` to cancel it).",
    access: access.public,
    effect: "write",
    body: SignInBody,
    response: { status: 200, schema: wrapped("users", UserSchema) },
    errors: [409],
    handler: async ({ body, baseUrl, headers }) => {
      const result = await signInWithPasskey({
        challengeId: body.challengeId,
        response: body.response as AuthenticationResponseJSON,
        userAgent: headers["user-agent"],
      });
      if (result.kind === "notRecognised") throw new HttpError(401, NOT_RECOGNISED_MESSAGE);
      if (result.kind === "scheduledForDeletion") throw scheduledForDeletion(result.userDeletionScheduledAt);
      return {
        body: { message: SIGNED_IN_MESSAGE, users: [toApiUser(result.user)] },
        headers: {
          ...NO_STORE,
          "Set-Cookie": sessionCookie(baseUrl, result.cookieValue, result.maxAgeSeconds),
        },
      };
    },
  }),
  operation({
    id: "listPasskeys",
    method: "GET",
    path: "/auth/passkeys",
    group: "auth",
    summary: "List my passkeys",
    description: "The signed-in user's passkeys, oldest first; 401 without a valid session cookie.",
    access: access.public,
    effect: "read",
    response: { status: 200, schema: Passkeys },
    handler: async ({ headers }) => {
      const user = await signedInUser(headers.cookie);
      const passkeys = await listUserPasskeys(user.userId);
      return { body: { message: "Passkeys", passkeys: passkeys.map(toApiPasskey) }, headers: NO_STORE };
    },
  }),
  operation({
    id: "removePasskey",
    method: "DELETE",
    path: "/auth/passkeys/{passkeyId}",
    group: "auth",
    summary: "Remove one of my passkeys",
    description: `Remove one of the signed-in user's passkeys: it no longer signs in. 409 ("${LAST_WAY_IN_MESSAGE}") when the user has no password and no other passkey; 404 for a passkey that is not the user's; 401 without a valid session cookie.`,
    access: access.public,
    effect: "delete",
    params: pathParams("passkeyId"),
    response: { status: 200, schema: MessageResponse },
    errors: [404, 409],
    handler: async ({ headers, params }) => {
      const user = await signedInUser(headers.cookie);
      await removeUserPasskey(user.userId, params.passkeyId);
      return { body: { message: "Passkey removed" }, headers: NO_STORE };
    },
  }),
  operation({
    id: "removePasskeyWithRecoveryToken",
    method: "POST",
    path: "/auth/passkeys/remove",
    group: "auth",
    summary: "Remove a passkey with a reset's recovery token",
    description: `Remove one of a user's passkeys without a session, with the \`recoveryToken\` a password reset answered (and e-mailed in each passkey's removal link); the token is good for that user's passkeys, any number of them, for 24 hours. 400 ("${INVALID_LINK_MESSAGE}") for a wrong or expired token or an unknown address, alike; 404 for a passkey that is not that user's.`,
    access: access.public,
    effect: "delete",
    body: RemoveWithTokenBody,
    response: { status: 200, schema: MessageResponse },
    errors: [400, 404, 409, 429],
    handler: async ({ body }) => {
      await removePasskeyWithRecoveryToken(body);
      return { body: { message: PASSKEY_REMOVED_MESSAGE }, headers: NO_STORE };
    },
  }),
];
