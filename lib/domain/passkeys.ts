/**
 * Passkeys (issue 22, docs/accounts.md "Passkeys"): a signed-in user registers WebAuthn
 * credentials, and anyone signs in with one as a discoverable credential (no e-mail address typed).
 * The relying party (id, origin, name) comes from configuration, read at call time.
 *
 * Rules kept here:
 * - every ceremony's challenge is stored for 5 minutes and used once: it is claimed (a conditional
 *   delete) before the response is checked, so of racing uses of one challenge exactly one goes on,
 *   and a failed check has used it up too;
 * - the WebAuthn user handle is the user id's bytes, so a sign-in finds its passkey with one GetItem;
 * - a signature counter only moves forward (a conditional write): a regression is refused;
 * - at most 20 passkeys per user, and a user keeps a way in (a password or another passkey), both
 *   kept by a count moved in the same transaction as each passkey added or removed.
 */
import { createHash, randomUUID } from "node:crypto";
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from "@simplewebauthn/server";
import { getAccountConfig } from "#lib/account-config.ts";
import { now as clockNow } from "#lib/clock.ts";
import { findAccount } from "#lib/db/entities/account.ts";
import {
  addPasskey,
  claimPasskeyChallenge,
  findPasskey,
  listPasskeys,
  type PasskeyChallengeItem,
  type PasskeyItem,
  type PasskeyPurpose,
  passkeyKeys,
  putPasskeyChallenge,
  recordPasskeyUse,
  removePasskey,
} from "#lib/db/entities/passkey.ts";
import { findUser, type UserItem } from "#lib/db/entities/user.ts";
import { nowIso } from "#lib/db/store.ts";
import { loadOnce } from "#lib/lazy.ts";
import { log } from "#lib/log.ts";
import { badRequest, conflict, notFound } from "#lib/shared/errors.ts";
import { SESSION_ABSOLUTE_SECONDS, startSession } from "./accounts.ts";
import { createNotification } from "./notifications.ts";

/** Loaded on first use: the other /auth routes (and the MCP function) do not pay for it. */
const webauthn = loadOnce(() => import("@simplewebauthn/server"));

export const CHALLENGE_LIFETIME_SECONDS = 5 * 60;
export const MAX_PASSKEYS_PER_USER = 20;
export const PASSKEY_NAME_MAX_LENGTH = 64;
/** COSE algorithms offered, most common first: ES256, EdDSA, RS256. */
const ALGORITHMS = [-7, -8, -257];

export const CHALLENGE_MESSAGE = "Passkey challenge expired or already used; start again";
export const NOT_RECOGNISED_MESSAGE = "Passkey not recognised";
export const LIMIT_MESSAGE = `You have ${MAX_PASSKEYS_PER_USER} passkeys, the most an account may have; remove one first`;
export const ALREADY_REGISTERED_MESSAGE = "This passkey is already registered";
export const LAST_WAY_IN_MESSAGE =
  "This is your only way to sign in: set a password (forgot password) or add another passkey first";
export const PASSKEY_NOT_FOUND_MESSAGE = "Passkey not found";

const nowSeconds = () => Math.floor(clockNow() / 1000);
/** The passkey's public id: SHA-256 of its credential id's bytes, base64url (43 characters). */
const credentialHashOf = (credentialId: string) =>
  createHash("sha256").update(Buffer.from(credentialId, "base64url")).digest("base64url");
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

async function newChallenge(purpose: PasskeyPurpose, challenge: string, userId?: string): Promise<string> {
  const challengeId = randomUUID();
  const expiresAt = nowSeconds() + CHALLENGE_LIFETIME_SECONDS;
  await putPasskeyChallenge({
    ...passkeyKeys.challenge(challengeId),
    entity: "passkeyChallenge",
    challengeId,
    purpose,
    challenge,
    ...(userId ? { userId } : {}),
    expiresAt,
    TTL: expiresAt + 3600,
  });
  return challengeId;
}

/** Claim a challenge for `purpose` (and, for a registration, its user); throws when it is not there to claim. */
async function claimChallenge(
  challengeId: string,
  purpose: PasskeyPurpose,
  userId?: string,
): Promise<PasskeyChallengeItem> {
  const claimed = UUID.test(challengeId) ? await claimPasskeyChallenge(challengeId) : undefined;
  if (
    !claimed ||
    claimed.purpose !== purpose ||
    claimed.expiresAt <= nowSeconds() ||
    (userId !== undefined && claimed.userId !== userId)
  )
    throw badRequest(CHALLENGE_MESSAGE);
  return claimed;
}

/** The user's passkeys, oldest first. */
export async function listUserPasskeys(userId: string): Promise<PasskeyItem[]> {
  return (await listPasskeys(userId)).sort((a, b) => a.createdAt.localeCompare(b.createdAt));
}

/** A passkey as its owner sees it: never the key or the counter. */
export function toApiPasskey(passkey: PasskeyItem) {
  return {
    passkeyId: passkey.credentialHash,
    passkeyName: passkey.name,
    passkeyCreated: passkey.createdAt,
    passkeyLastUsed: passkey.lastUsedAt ?? null,
    passkeySynced: passkey.backedUp === true,
  };
}

/**
 * Options for `navigator.credentials.create` (`startRegistration`) for the signed-in `user`: a
 * discoverable credential (resident key required), user verification preferred, no attestation,
 * the user's passkeys excluded. The WebAuthn user id is the user id's bytes.
 */
export async function registrationOptions(
  user: UserItem,
): Promise<{ challengeId: string; options: PublicKeyCredentialCreationOptionsJSON }> {
  const existing = await listPasskeys(user.userId);
  if (existing.length >= MAX_PASSKEYS_PER_USER) throw conflict(LIMIT_MESSAGE);
  const { rpId, rpName } = getAccountConfig().webauthn;
  const displayName = [user.userFirstName, user.userLastName].filter(Boolean).join(" ");
  const options = await (await webauthn()).generateRegistrationOptions({
    rpName,
    rpID: rpId,
    userID: new Uint8Array(Buffer.from(user.userId, "utf8")),
    userName: String(user.userEmail ?? user.userId),
    userDisplayName: displayName || String(user.userEmail ?? ""),
    timeout: CHALLENGE_LIFETIME_SECONDS * 1000,
    attestationType: "none",
    excludeCredentials: existing.map((passkey) => ({
      id: passkey.credentialId,
      ...(passkey.transports ? { transports: passkey.transports as never } : {}),
    })),
    authenticatorSelection: { residentKey: "required", userVerification: "preferred" },
    supportedAlgorithmIDs: ALGORITHMS,
  });
  return { challengeId: await newChallenge("registration", options.challenge, user.userId), options };
}

/**
 * Register the passkey of a `navigator.credentials.create` response, with the challenge of
 * `registrationOptions`: checked against the challenge, the origin and the relying-party id. The
 * user is notified. Answers the user's passkeys.
 */
export async function registerPasskey(
  user: UserItem,
  input: { challengeId: string; response: RegistrationResponseJSON; name?: string },
): Promise<PasskeyItem[]> {
  const challenge = await claimChallenge(input.challengeId, "registration", user.userId);
  const { rpId, origin } = getAccountConfig().webauthn;
  let verification: Awaited<ReturnType<Awaited<ReturnType<typeof webauthn>>["verifyRegistrationResponse"]>>;
  try {
    verification = await (await webauthn()).verifyRegistrationResponse({
      response: input.response,
      expectedChallenge: challenge.challenge,
      expectedOrigin: origin,
      expectedRPID: rpId,
      requireUserVerification: false,
      supportedAlgorithmIDs: ALGORITHMS,
    });
  } catch (error) {
    throw badRequest(
      `Passkey registration could not be verified: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  if (!verification.verified || !verification.registrationInfo)
    throw badRequest("Passkey registration could not be verified");
  const { credential, credentialDeviceType, credentialBackedUp } = verification.registrationInfo;
  const credentialHash = credentialHashOf(credential.id);
  const name = input.name?.trim() || `Passkey ${nowIso().slice(0, 10)}`;
  const passkey: PasskeyItem = {
    ...passkeyKeys.passkey(user.userId, credentialHash),
    entity: "passkey",
    userId: user.userId,
    credentialId: credential.id,
    credentialHash,
    publicKey: Buffer.from(credential.publicKey).toString("base64url"),
    counter: credential.counter,
    ...(credential.transports?.length ? { transports: [...credential.transports] } : {}),
    deviceType: credentialDeviceType,
    backedUp: credentialBackedUp,
    name,
    createdAt: nowIso(),
  };
  const added = await addPasskey(passkey, MAX_PASSKEYS_PER_USER);
  if (added === "limit") throw conflict(LIMIT_MESSAGE);
  if (added === "exists") throw conflict(ALREADY_REGISTERED_MESSAGE);
  await createNotification(
    { kind: "user", userId: user.userId },
    {
      type: "passkeyAdded",
      title: "Passkey added",
      message: `A passkey named "${name}" was added to your account. If that was not you, remove it and reset your password.`,
    },
  );
  return listUserPasskeys(user.userId);
}

/** Options for `navigator.credentials.get` (`startAuthentication`): a discoverable sign-in (no allowCredentials). */
export async function authenticationOptions(): Promise<{
  challengeId: string;
  options: PublicKeyCredentialRequestOptionsJSON;
}> {
  const options = await (await webauthn()).generateAuthenticationOptions({
    rpID: getAccountConfig().webauthn.rpId,
    userVerification: "preferred",
    timeout: CHALLENGE_LIFETIME_SECONDS * 1000,
  });
  return { challengeId: await newChallenge("authentication", options.challenge), options };
}

export type PasskeySignInResult =
  | { kind: "signedIn"; user: UserItem; cookieValue: string; maxAgeSeconds: number }
  | { kind: "notRecognised" }
  /** An account scheduled for deletion: no session; the console asks for the password (sign-in with cancelDeletion). */
  | { kind: "scheduledForDeletion"; userDeletionScheduledAt: string };

/**
 * Sign in with the passkey of a `navigator.credentials.get` response, with the challenge of
 * `authenticationOptions`: the user handle names the user, the credential id the passkey (one
 * GetItem); the signature, challenge, origin, relying-party id and counter are checked, and the
 * counter and last use are recorded (a conditional write) before a session starts.
 */
export async function signInWithPasskey(input: {
  challengeId: string;
  response: AuthenticationResponseJSON;
  userAgent?: string;
}): Promise<PasskeySignInResult> {
  const challenge = await claimChallenge(input.challengeId, "authentication");
  const userId = Buffer.from(input.response.response.userHandle ?? "", "base64url").toString("utf8");
  if (!UUID.test(userId)) return { kind: "notRecognised" };
  const passkey = await findPasskey(userId, credentialHashOf(input.response.id));
  if (!passkey || passkey.credentialId !== input.response.id) return { kind: "notRecognised" };
  const { rpId, origin } = getAccountConfig().webauthn;
  let newCounter: number;
  try {
    const verification = await (await webauthn()).verifyAuthenticationResponse({
      response: input.response,
      expectedChallenge: challenge.challenge,
      expectedOrigin: origin,
      expectedRPID: rpId,
      credential: {
        id: passkey.credentialId,
        publicKey: new Uint8Array(Buffer.from(passkey.publicKey, "base64url")),
        counter: passkey.counter,
        ...(passkey.transports ? { transports: passkey.transports as never } : {}),
      },
      requireUserVerification: false,
    });
    if (!verification.verified) return { kind: "notRecognised" };
    newCounter = verification.authenticationInfo.newCounter;
  } catch (error) {
    log.info("Passkey sign-in refused", {
      reason: error instanceof Error ? error.message : String(error),
      userId,
    });
    return { kind: "notRecognised" };
  }
  if (!(await recordPasskeyUse(passkey, newCounter, nowIso()))) return { kind: "notRecognised" };
  const user = await findUser(userId);
  if (!user) return { kind: "notRecognised" };
  if (user.userStatus === "pendingDeletion")
    return { kind: "scheduledForDeletion", userDeletionScheduledAt: user.userDeletionScheduledAt ?? "" };
  const cookieValue = await startSession(userId, input.userAgent);
  return { kind: "signedIn", user, cookieValue, maxAgeSeconds: SESSION_ABSOLUTE_SECONDS };
}

/**
 * Remove one of the user's passkeys by its id. Refused when it would leave the user no way in: no
 * password and no other passkey. The user is notified.
 */
export async function removeUserPasskey(userId: string, passkeyId: string): Promise<void> {
  const passkey = /^[A-Za-z0-9_-]{43}$/.test(passkeyId) ? await findPasskey(userId, passkeyId) : undefined;
  if (!passkey) throw notFound(PASSKEY_NOT_FOUND_MESSAGE);
  const account = await findAccount(userId);
  const removed = await removePasskey(userId, passkeyId, { hasPassword: Boolean(account?.passwordHash) });
  if (removed === "notFound") throw notFound(PASSKEY_NOT_FOUND_MESSAGE);
  if (removed === "lastWayIn") throw conflict(LAST_WAY_IN_MESSAGE);
  await createNotification(
    { kind: "user", userId },
    {
      type: "passkeyRemoved",
      title: "Passkey removed",
      message: `The passkey named "${passkey.name}" was removed from your account; it no longer signs you in.`,
    },
  );
}
