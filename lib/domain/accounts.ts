/**
 * Accounts a person opens and signs in to (issue 21, docs/accounts.md): sign-up, e-mail
 * verification, sign-in with its lockout, sessions, password reset. Identity stays behind this one
 * module, so that an OIDC provider can be added later as SSO.
 *
 * Rules kept here:
 * - no account enumeration: sign-up, resend and forgot-password answer the same for any address
 *   (what differs is only the e-mail the address's owner receives);
 * - codes are 6 random digits, stored as a salted SHA-256, single use, with an expiry
 *   (verification 24 h, reset 1 h) and void after 5 wrong attempts (counted with conditional writes);
 * - 5 failed sign-ins of an address within 15 minutes lock it until that window ends;
 * - sessions are 32 random bytes, stored as their SHA-256, with an idle and an absolute expiry;
 * - no secret (password, code, session secret) is logged or answered after its creation.
 */
import { createHash, randomBytes, randomInt, randomUUID, timingSafeEqual } from "node:crypto";
import { getAccountConfig } from "#lib/account-config.ts";
import { now as clockNow } from "#lib/clock.ts";
import { getConfig } from "#lib/config.ts";
import {
  type AccountCodeItem,
  type AccountItem,
  type CodePurpose,
  countWrongCode,
  createUserWithAccount,
  deleteSession,
  findAccount,
  findAccountCode,
  findDevice,
  findSession,
  hasDevice,
  listSessions,
  putAccountCode,
  putDevice,
  putNewAccount,
  putSession,
  redeemAccountCode,
  releaseSignInAttempt,
  replacePassword,
  replaceUnverifiedPassword,
  reserveSignInAttempt,
  type SessionItem,
  touchSession,
} from "#lib/db/entities/account.ts";
import { unqueueDeletion } from "#lib/db/entities/deletion-queue.ts";
import { listPendingInvitesAddressedTo } from "#lib/db/entities/invite.ts";
import { listPendingMspInvitesAddressedTo } from "#lib/db/entities/msp.ts";
import { findUser, type NewUserItem, type UserItem, userItemOf, userKeys } from "#lib/db/entities/user.ts";
import { keys } from "#lib/db/keys.ts";
import { nowIso } from "#lib/db/store.ts";
import { escapeHtml, sendEmail, textToHtml } from "#lib/email.ts";
import { describeError, log } from "#lib/log.ts";
import { conflict, limitReached, validationFailed } from "#lib/shared/errors.ts";
import { passwordProblem } from "#lib/shared/password-policy.ts";
import { hashPassword, verifyAgainstNothing, verifyPassword } from "#lib/shared/passwords.ts";
import { createNotification } from "./notifications.ts";
import { consumeRequest } from "./rate-limit.ts";
import { type RevokedCounts, revokeEveryWayIn } from "./revocation.ts";
import { findUserIdByEmail } from "./users.ts";

export const CODE_DIGITS = 6;
export const VERIFY_CODE_LIFETIME_SECONDS = 24 * 3600;
export const RESET_CODE_LIFETIME_SECONDS = 3600;
/** The first password of a user an operator created (`admin users create`): a reset code that lasts a day. */
export const SET_PASSWORD_CODE_LIFETIME_SECONDS = 24 * 3600;
/** The device cookie (new-browser notice) lives a year; its item's TTL a year after the last sign-in. */
export const DEVICE_SECONDS = 365 * 24 * 3600;
export const MAX_CODE_ATTEMPTS = 5;
export const SIGN_IN_WINDOW_MS = 15 * 60_000;
export const MAX_SIGN_IN_FAILURES = 5;
export const SESSION_IDLE_SECONDS = 24 * 3600;
export const SESSION_ABSOLUTE_SECONDS = 7 * 24 * 3600;
/** A session's idle expiry is moved on at most this often (one write per minute of use, not per request). */
const SESSION_TOUCH_SECONDS = 60;
/** E-mails (verification, reset, "you already have an account") per address and hour. */
export const EMAILS_PER_ADDRESS_PER_HOUR = 5;
const HOUR_MS = 3_600_000;

export const SIGN_UP_MESSAGE = "Check your e-mail: we sent a message to this address with what to do next";
export const VERIFIED_MESSAGE = "Email address verified; you can sign in now";
export const RESEND_MESSAGE =
  "If this address has an account waiting for verification, a new code is on its way";
export const FORGOT_MESSAGE = "If this address has an account, a password reset code is on its way";
export const RESET_MESSAGE = "Password changed; every session was signed out. Sign in with the new password";
export const SIGNED_IN_MESSAGE = "Signed in";
export const SIGNED_OUT_MESSAGE = "Signed out";
export const INVALID_CODE_MESSAGE = "Invalid or expired code";
export const INVALID_CREDENTIALS_MESSAGE = "Invalid email or password";
export const NOT_VERIFIED_MESSAGE = "Email address not verified";
export const LOCKED_MESSAGE = "Too many failed sign-ins for this address; try again later";
export const EMAIL_LIMIT_MESSAGE = "Too many e-mails sent to this address; try again later";
export const AUTH_IP_LIMIT_MESSAGE = "Too many requests from this address; try again later";

/** The cookie that carries a session: `__Host-` prefixed (and Secure) over https. */
export const sessionCookieName = (secure: boolean) => (secure ? "__Host-session" : "session");
/** The cookie that marks a browser a user signed in from (the new-browser notice). */
export const deviceCookieName = (secure: boolean) => (secure ? "__Host-device" : "device");

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");
const nowSeconds = () => Math.floor(clockNow() / 1000);
const normalEmail = (email: string) => email.trim().toLowerCase();

/** Count one e-mail to `email` (every address alike, known or not); throws when its hour is full. */
async function spendEmail(email: string): Promise<void> {
  const decision = await consumeRequest(`MAILTO#${email}`, EMAILS_PER_ADDRESS_PER_HOUR, {
    windowMs: HOUR_MS,
    nowMs: clockNow(),
  });
  if (!decision.allowed) throw limitReached(EMAIL_LIMIT_MESSAGE, decision.retryAfterSeconds);
}

// ---- the per-IP limit ----

/**
 * The address a request is counted on: an IPv4-mapped IPv6 address (`::ffff:127.0.0.1`) as its IPv4
 * address, so that one caller has one counter whichever gateway's event carries it; any other as is.
 */
export const authSourceOf = (sourceIp: string | undefined): string => {
  const ip = sourceIp?.trim() || "unknown";
  return /^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(ip) ? ip.slice(7) : ip;
};

/**
 * Count one request of `sourceIp` on the per-IP limit of the account routes: every `/auth/*` request
 * (lib/api/operations/auth.ts) and every password attempt on the MCP consent page (lib/oauth/http.ts)
 * take one of the same AUTH_REQUESTS_PER_IP_PER_MINUTE of the address's UTC minute (`IP#<address>`).
 * `limited` with the seconds until the minute ends once they are used up.
 */
export async function countAuthRequest(
  sourceIp: string | undefined,
): Promise<{ limited: false } | { limited: true; retryAfterSeconds: number }> {
  const decision = await consumeRequest(
    `IP#${authSourceOf(sourceIp)}`,
    getAccountConfig().authRequestsPerIpPerMinute,
  );
  return decision.allowed
    ? { limited: false }
    : { limited: true, retryAfterSeconds: decision.retryAfterSeconds };
}

// ---- the same work for any address (docs/accounts.md "The same work for any address") ----

/**
 * Where the e-mail of an address without an account goes instead: the SES mailbox simulator's
 * address that accepts and drops a message. The answer's wait then holds the same SES call as for
 * an address that has an account, so its time tells nobody which addresses do.
 */
export const SIMULATOR_ADDRESS = "success@simulator.amazonses.com";

/** A user id no user has (not a UUID): the account read of an address without a user. */
const NO_USER_ID = "none";

/**
 * The user id under which the code of an address without a user is written (and never read): the
 * same PutItem as a real code, on a partition of its own per address (no hot key), expiring by its
 * TTL like any code.
 */
const standInUserId = (email: string) => `none-${sha256(email).slice(0, 32)}`;

/**
 * The user and account of an address, with the same two reads whether or not it has a user: the
 * address's e-mail item, then an account (a user id that matches nothing for an unknown address).
 */
async function accountOf(email: string): Promise<{ userId?: string; account?: AccountItem }> {
  const userId = await findUserIdByEmail(email);
  const account = await findAccount(userId ?? NO_USER_ID);
  return userId ? { userId, account } : {};
}

// ---- codes ----

function codeHashOf(code: string, salt: string) {
  return sha256(`${salt}:${code}`);
}

async function issueCode(
  userId: string,
  purpose: CodePurpose,
  lifetime = purpose === "verify" ? VERIFY_CODE_LIFETIME_SECONDS : RESET_CODE_LIFETIME_SECONDS,
): Promise<string> {
  const code = String(randomInt(0, 10 ** CODE_DIGITS)).padStart(CODE_DIGITS, "0");
  const salt = randomBytes(16).toString("hex");
  const expiresAt = nowSeconds() + lifetime;
  await putAccountCode({
    ...keys.accountCode(userId, purpose),
    entity: "accountCode",
    userId,
    purpose,
    codeHash: codeHashOf(code, salt),
    codeSalt: salt,
    attempts: 0,
    expiresAt,
    createdAt: nowIso(),
    TTL: expiresAt + 3600,
  });
  return code;
}

const matches = (stored: AccountCodeItem, code: string) => {
  const given = Buffer.from(codeHashOf(code, stored.codeSalt), "hex");
  const expected = Buffer.from(stored.codeHash, "hex");
  return given.length === expected.length && timingSafeEqual(given, expected);
};

/**
 * Use the pending code of `purpose` of the address's user: true when it was the right code, in
 * time, not void, and this use won it (of racing uses exactly one does). A wrong code is counted.
 */
async function spendCode(
  email: string,
  purpose: CodePurpose,
  code: string,
  newPasswordHash?: string,
  /** Runs once the code is known right, before it is used; what it throws leaves the code unused. */
  beforeUse?: (userId: string) => Promise<void>,
): Promise<{ userId: string } | undefined> {
  const userId = await findUserIdByEmail(email);
  if (!userId) return undefined;
  const stored = await findAccountCode(userId, purpose);
  if (!stored || stored.attempts >= MAX_CODE_ATTEMPTS || stored.expiresAt <= nowSeconds()) return undefined;
  if (!/^\d{6}$/.test(code) || !matches(stored, code)) {
    await countWrongCode(stored, MAX_CODE_ATTEMPTS);
    return undefined;
  }
  await beforeUse?.(userId);
  const won = await redeemAccountCode(stored, {
    maxAttempts: MAX_CODE_ATTEMPTS,
    nowSeconds: nowSeconds(),
    newPasswordHash,
  });
  return won ? { userId } : undefined;
}

// ---- new passwords ----

/**
 * Refuse a new password that is common or easy to guess (lib/shared/password-policy.ts): a 400 naming
 * `password` and saying why. `userInputs` are the person's own details (address, names). The length
 * rule (12 to 256 characters) is the schema's, checked before.
 */
export async function refuseWeakPassword(password: string, userInputs: string[]): Promise<void> {
  const problem = await passwordProblem(password, userInputs);
  if (problem) throw validationFailed([{ field: "password", problem }]);
}

// ---- e-mails ----

/**
 * The links carry only URL-safe characters (the address is percent-encoded, the code is digits), so
 * they go into the HTML part as they are: the same text as in the text part.
 */
const signature = (appUrl: string) =>
  `\n--\nSent by the API gateway at ${appUrl} because this address was entered there. If that was not you, ignore this message.`;

async function sendVerification(email: string, code: string) {
  const { appUrl } = getConfig();
  const link = `${appUrl}/verify-email?email=${encodeURIComponent(email)}&code=${code}`;
  await sendEmail({
    to: email,
    subject: "Verify your e-mail address",
    text: [
      `Your verification code is ${code}. It expires in 24 hours.`,
      "",
      `Or open this link to verify your address: ${link}`,
      signature(appUrl),
    ].join("\n"),
    html: `<p>Your verification code is <strong>${code}</strong>. It expires in 24 hours.</p><p>Verify your address: <a href="${link}">${link}</a></p><p>Sent by the API gateway at ${escapeHtml(appUrl)} because this address was entered there. If that was not you, ignore this message.</p>`,
  });
}

/** An e-mail whose HTML part is its text, escaped (textToHtml). */
async function sendPlain(email: string, subject: string, lines: string[]) {
  const text = lines.join("\n");
  await sendEmail({ to: email, subject, text, html: textToHtml(text) });
}

async function sendAlreadyRegistered(email: string) {
  const { appUrl } = getConfig();
  await sendPlain(email, "You already have an account", [
    "Someone (perhaps you) tried to sign up with this address, which already has an account.",
    "",
    `Sign in at ${appUrl}, or reset your password at ${appUrl}/forgot-password if you forgot it.`,
    signature(appUrl),
  ]);
}

async function sendInvitationOnly(email: string) {
  const { appUrl } = getConfig();
  await sendPlain(email, "Sign-up is by invitation", [
    "Someone (perhaps you) tried to sign up with this address. Accounts here are opened by invitation only, and this address has no pending invitation, so no account was opened.",
    "",
    "Ask a member of the organisation you want to join to invite this address, then sign up again.",
    signature(appUrl),
  ]);
}

async function sendSetPassword(email: string, code: string) {
  const { appUrl } = getConfig();
  const link = `${appUrl}/reset-password?email=${encodeURIComponent(email)}&code=${code}`;
  await sendPlain(email, "Set your password", [
    "An operator of the API gateway opened an account for this address.",
    "",
    `Your code to choose a password is ${code}. It expires in 24 hours.`,
    "",
    `Or open this link to choose your password: ${link}`,
    "",
    `When it has expired, ask for a new code at ${appUrl}/forgot-password.`,
    "\n--",
    `Sent by the API gateway at ${appUrl} because an operator created an account for this address. If you did not expect it, ignore this message.`,
  ]);
}

async function sendReset(email: string, code: string) {
  const { appUrl } = getConfig();
  const link = `${appUrl}/reset-password?email=${encodeURIComponent(email)}&code=${code}`;
  await sendEmail({
    to: email,
    subject: "Reset your password",
    text: [
      `Your password reset code is ${code}. It expires in 1 hour.`,
      "",
      `Or open this link to choose a new password: ${link}`,
      signature(appUrl),
    ].join("\n"),
    html: `<p>Your password reset code is <strong>${code}</strong>. It expires in 1 hour.</p><p>Choose a new password: <a href="${link}">${link}</a></p><p>Sent by the API gateway at ${escapeHtml(appUrl)} because a reset was asked for this address. If that was not you, ignore this message.</p>`,
  });
}

// ---- flows ----

export interface SignUpInput {
  email: string;
  password: string;
  firstName: string;
  lastName: string;
}

/**
 * Open an account: a full user (user item, e-mail item) with an unverified account, and a
 * verification code by e-mail. An address that has an account gets an e-mail saying so instead
 * (one whose e-mail is not verified yet takes the new password and gets a new code). The caller
 * learns nothing either way.
 */
export async function signUp(input: SignUpInput): Promise<void> {
  const email = normalEmail(input.email);
  const { policy, allowedDomains } = getAccountConfig().signUp;
  // The domain list is no secret: an address outside it is told so (400 naming `email`).
  const domain = email.slice(email.lastIndexOf("@") + 1);
  if (allowedDomains.length > 0 && !allowedDomains.includes(domain))
    throw validationFailed([
      { field: "email", problem: `sign-up is limited to addresses at ${allowedDomains.join(", ")}` },
    ]);
  // On the input alone (the same answer for any address), before anything is spent or written.
  await refuseWeakPassword(input.password, [email, input.firstName, input.lastName]);
  await spendEmail(email);
  const passwordHash = await hashPassword(input.password);
  const existing = await findUserIdByEmail(email);
  if (!existing && policy === "invite-only" && !(await hasPendingInvite(email))) {
    // Same answer as any sign-up (no enumeration of invites); the address's owner hears why.
    await sendInvitationOnly(email);
    return;
  }
  if (existing) {
    const account = await findAccount(existing);
    if (account && !account.emailVerified && (await replaceUnverifiedPassword(existing, passwordHash))) {
      await sendVerification(email, await issueCode(existing, "verify"));
      return;
    }
    await sendAlreadyRegistered(email);
    return;
  }
  const userId = randomUUID();
  const now = nowIso();
  const user: NewUserItem = {
    ...userKeys.item(userId),
    entity: "user",
    userId,
    userEmail: email,
    userUsername: email,
    userFirstName: input.firstName.trim(),
    userLastName: input.lastName.trim(),
    userPhone: "",
    userBio: "",
    systemAdmin: false,
    tokens: {},
    userCreated: now,
    userUpdated: now,
  };
  const account: AccountItem = {
    ...keys.userAccount(userId),
    entity: "account",
    userId,
    passwordHash,
    emailVerified: false,
    passwordChanged: now,
    accountCreated: now,
  };
  const created = await createUserWithAccount(
    user,
    { ...userKeys.email(email), entity: "userEmail", userId },
    account,
  );
  if (created === "emailTaken") {
    // Another sign-up of the same address won the race: its owner hears about one account.
    await sendAlreadyRegistered(email);
    return;
  }
  await sendVerification(email, await issueCode(userId, "verify"));
}

/** Whether an invite (to a client or an MSP) addressed to `email` is pending: two Queries of GSI1. */
async function hasPendingInvite(email: string): Promise<boolean> {
  const [clientInvites, mspInvites] = await Promise.all([
    listPendingInvitesAddressedTo(email),
    listPendingMspInvitesAddressedTo(email),
  ]);
  return clientInvites.length > 0 || mspInvites.length > 0;
}

/**
 * The set-password e-mail of a user an operator created (`admin users create`): a reset code that
 * lasts 24 hours and the reset link. Not counted against the address's e-mail limit (an operator
 * asked for it).
 */
export async function sendSetPasswordEmail(userId: string, emailInput: string): Promise<void> {
  const email = normalEmail(emailInput);
  await sendSetPassword(email, await issueCode(userId, "reset", SET_PASSWORD_CODE_LIFETIME_SECONDS));
}

/** Verify an address with its code: true once (the single use), false for a wrong, used, void or expired code. */
export async function verifyEmail(input: { email: string; code: string }): Promise<boolean> {
  return (await spendCode(normalEmail(input.email), "verify", input.code.trim())) !== undefined;
}

/** A new verification code for an address whose account waits for verification; the same work otherwise. */
export async function resendVerification(emailInput: string): Promise<void> {
  const email = normalEmail(emailInput);
  await spendEmail(email);
  const { userId, account } = await accountOf(email);
  if (userId && account && !account.emailVerified)
    await sendVerification(email, await issueCode(userId, "verify"));
  else await sendVerification(SIMULATOR_ADDRESS, await issueCode(standInUserId(email), "verify"));
}

/**
 * A password reset code for an address with a user (an operator-created user sets a first password
 * so); the same work for any other address.
 */
export async function forgotPassword(emailInput: string): Promise<void> {
  const email = normalEmail(emailInput);
  await spendEmail(email);
  const { userId } = await accountOf(email);
  if (userId) await sendReset(email, await issueCode(userId, "reset"));
  else await sendReset(SIMULATOR_ADDRESS, await issueCode(standInUserId(email), "reset"));
}

/**
 * A new password with a reset code: every session, API token and OAuth grant of the user is
 * revoked (lib/domain/revocation.ts), after the password changed (so nobody signs in
 * again with the old one meanwhile). Undefined for a wrong, used, void or expired code. The
 * "Password changed" e-mail and the passkeys' recovery token are lib/domain/recovery.ts's.
 */
export async function resetPassword(input: {
  email: string;
  code: string;
  password: string;
}): Promise<{ userId: string; email: string; revoked: RevokedCounts } | undefined> {
  const email = normalEmail(input.email);
  // The address alone first (no read: the answer tells nobody whether it has an account); once the
  // code is known right, the user's names too, before the code is used (a refusal leaves it usable).
  await refuseWeakPassword(input.password, [email]);
  const passwordHash = await hashPassword(input.password);
  const used = await spendCode(email, "reset", input.code.trim(), passwordHash, async (userId) => {
    const user = await findUser(userId);
    await refuseWeakPassword(input.password, [email, user?.userFirstName ?? "", user?.userLastName ?? ""]);
  });
  if (!used) return undefined;
  const revoked = await revokeEveryWayIn(used.userId);
  await createNotification(
    { kind: "user", userId: used.userId },
    {
      type: "passwordChanged",
      title: "Password changed",
      message: `Your password was reset with a code sent to your e-mail address. Signed out and revoked: ${describeRevoked(revoked)}.`,
    },
  );
  return { userId: used.userId, email, revoked };
}

/** "2 sessions, 1 API token and 0 MCP grants": what a reset or change revoked, for a message. */
export function describeRevoked(revoked: RevokedCounts): string {
  const count = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;
  return `${count(revoked.sessions, "session", "sessions")}, ${count(revoked.tokens, "API token", "API tokens")} and ${count(revoked.grants, "MCP grant", "MCP grants")}`;
}

export const CHANGED_MESSAGE = "Password changed";
export const CURRENT_PASSWORD_INCORRECT = "does not match your current password";

export type ChangePasswordResult =
  | { kind: "changed"; revoked: RevokedCounts }
  | { kind: "locked"; retryAfterSeconds: number };

/**
 * A signed-in user's new password (docs/accounts.md#recovery-ends-every-way-in): the current one is checked under the sign-in rules
 * (a wrong one counts as a failed sign-in of the address, with the same lockout), the new one under
 * sign-up's (length by the schema, then `passwordProblem`: 400 naming `newPassword`). With
 * `signOutOtherSessions` (the default), every other session, every API token and every OAuth grant
 * of the user is revoked; the session the change was made in stays. The user is notified.
 */
export async function changePassword(
  signedIn: { user: UserItem; session: SessionItem },
  input: { currentPassword: string; newPassword: string; signOutOtherSessions: boolean },
): Promise<ChangePasswordResult> {
  const { user, session } = signedIn;
  const problem = await passwordProblem(input.newPassword, [
    user.userEmail,
    user.userFirstName,
    user.userLastName,
  ]);
  if (problem) throw validationFailed([{ field: "newPassword", problem }]);
  const checked = await checkPassword(user.userEmail, input.currentPassword);
  if (checked.kind === "locked") return checked;
  if (checked.kind !== "valid" || checked.user.userId !== user.userId || !checked.account.passwordHash)
    throw validationFailed([{ field: "currentPassword", problem: CURRENT_PASSWORD_INCORRECT }]);
  const passwordHash = await hashPassword(input.newPassword);
  // Conditioned on the hash just verified: of racing changes (or a reset) one wins.
  if (!(await replacePassword(user.userId, checked.account.passwordHash, passwordHash)))
    throw conflict("The password was changed meanwhile; sign in again");
  const revoked = input.signOutOtherSessions
    ? await revokeEveryWayIn(user.userId, { keepSessionHash: session.secretHash })
    : { sessions: 0, tokens: 0, grants: 0 };
  await createNotification(
    { kind: "user", userId: user.userId },
    {
      type: "passwordChanged",
      title: "Password changed",
      message: input.signOutOtherSessions
        ? `Your password was changed while signed in. Signed out and revoked: ${describeRevoked(revoked)}.`
        : "Your password was changed while signed in; your other sessions, API tokens and MCP grants were kept.",
    },
  );
  return { kind: "changed", revoked };
}

export type SignInResult =
  | {
      kind: "signedIn";
      user: UserItem;
      cookieValue: string;
      maxAgeSeconds: number;
      /** The browser's device cookie value to set (a new one, or the known one with its year renewed). */
      deviceCookieValue: string;
    }
  | { kind: "invalid" }
  | { kind: "notVerified" }
  | { kind: "locked"; retryAfterSeconds: number }
  /** The right password of an account scheduled for deletion, without `cancelDeletion`: no session. */
  | { kind: "scheduledForDeletion"; userDeletionScheduledAt: string };

/** The 409 of a sign-in (password or passkey) of an account scheduled for deletion. */
export const scheduledForDeletionMessage = (at: string) =>
  `This account is scheduled for deletion on ${at}; sign in again with cancelDeletion to cancel the deletion`;

export type PasswordCheck =
  | { kind: "valid"; user: UserItem; account: AccountItem }
  | { kind: "invalid" }
  | { kind: "notVerified" }
  | { kind: "locked"; retryAfterSeconds: number };

/**
 * Check an address's password under the sign-in rules, without starting a session (the MCP consent
 * page, lib/oauth). Every attempt first takes one of the address's 5 attempts of its 15-minute
 * window (exactly, a conditional write); the right password gives it back, so only failures stay
 * counted. When none is left the answer is `locked` until the window ends, whatever the password.
 * An unknown address costs the same time and counts the same as a wrong password.
 */
export async function checkPassword(emailInput: string, password: string): Promise<PasswordCheck> {
  const email = normalEmail(emailInput);
  const now = clockNow();
  const reservation = await reserveSignInAttempt(email, {
    nowMs: now,
    windowMs: SIGN_IN_WINDOW_MS,
    max: MAX_SIGN_IN_FAILURES,
  });
  if (!reservation.reserved)
    return {
      kind: "locked",
      // At most the window: a concurrent attempt that read the clock later may have opened it.
      retryAfterSeconds: Math.min(
        SIGN_IN_WINDOW_MS / 1000,
        Math.max(1, Math.ceil((reservation.windowEnd - now) / 1000)),
      ),
    };
  const { userId, account } = await accountOf(email);
  const right = account?.passwordHash
    ? await verifyPassword(password, account.passwordHash)
    : await verifyAgainstNothing(password);
  const user = right && userId ? await findUser(userId) : undefined;
  if (!right || !account || !user) return { kind: "invalid" };
  await releaseSignInAttempt(email, reservation.windowEnd);
  if (!account.emailVerified) return { kind: "notVerified" };
  return { kind: "valid", user, account };
}

/** Sign in with e-mail and password (the rules of checkPassword), starting a session. */
export async function signIn(input: {
  email: string;
  password: string;
  userAgent?: string;
  /** The request's `Cookie` header: its device cookie tells a known browser from a new one. */
  cookieHeader?: string;
  /** Cancel the account's scheduled deletion (docs/accounts.md#recovery-ends-every-way-in); without it such an account gets no session. */
  cancelDeletion?: boolean;
}): Promise<SignInResult> {
  const checked = await checkPassword(input.email, input.password);
  if (checked.kind !== "valid") return checked;
  let { user } = checked;
  if (user.userStatus === "pendingDeletion") {
    if (!input.cancelDeletion)
      return { kind: "scheduledForDeletion", userDeletionScheduledAt: user.userDeletionScheduledAt ?? "" };
    const active = await unqueueDeletion("USER", userKeys.item(user.userId));
    if (active) user = userItemOf(active);
    log.info("Scheduled user deletion cancelled", { userId: user.userId });
  }
  const cookieValue = await startSession(user.userId, input.userAgent);
  const deviceCookieValue = await recordBrowser(user.userId, input.cookieHeader, input.userAgent);
  return { kind: "signedIn", user, cookieValue, maxAgeSeconds: SESSION_ABSOLUTE_SECONDS, deviceCookieValue };
}

/** The values of the cookies named one of `names` in a `Cookie` header, in order. */
function* cookieValuesOf(cookieHeader: string | undefined, names: readonly string[]): Generator<string> {
  for (const part of cookieHeader?.split(";") ?? []) {
    const at = part.indexOf("=");
    if (at >= 0 && names.includes(part.slice(0, at).trim())) yield part.slice(at + 1).trim();
  }
}

/** The value of the first cookie named one of `names` in a `Cookie` header. */
const cookieValueOf = (cookieHeader: string | undefined, names: readonly string[]): string | undefined =>
  cookieValuesOf(cookieHeader, names).next().value ?? undefined;

/** A short name of the browser of a User-Agent ("Firefox on Linux"), or the header itself, truncated. */
export function browserOf(userAgent: string | undefined): string {
  const ua = userAgent?.trim() ?? "";
  if (!ua) return "an unknown browser";
  const browser = /Edg\//.test(ua)
    ? "Edge"
    : /Firefox\//.test(ua)
      ? "Firefox"
      : /Chrome\//.test(ua)
        ? "Chrome"
        : /Safari\//.test(ua)
          ? "Safari"
          : undefined;
  const system = /Android/.test(ua)
    ? "Android"
    : /iPhone|iPad/.test(ua)
      ? "iOS"
      : /Windows/.test(ua)
        ? "Windows"
        : /Mac OS X|Macintosh/.test(ua)
          ? "macOS"
          : /Linux/.test(ua)
            ? "Linux"
            : undefined;
  if (browser) return system ? `${browser} on ${system}` : browser;
  return ua.length > 80 ? `${ua.slice(0, 79)}…` : ua;
}

/**
 * Sign-in from a browser: a browser that carries a known device cookie of the user is refreshed; any
 * other gets a new device cookie, and the user a "New sign-in" notification, unless the user has no
 * known browser at all (the first sign-in, after sign-up or a first password: nobody to warn yet).
 * The table keeps only SHA-256 of the cookie's value.
 */
async function recordBrowser(userId: string, cookieHeader: string | undefined, userAgent?: string) {
  const presented = cookieValueOf(cookieHeader, [deviceCookieName(true), deviceCookieName(false)]);
  const valid = presented && /^[A-Za-z0-9_-]{43}$/.test(presented) ? presented : undefined;
  const known = valid ? await findDevice(userId, sha256(valid)) : undefined;
  const value = known && valid ? valid : randomBytes(32).toString("base64url");
  if (!known && (await hasDevice(userId))) {
    const at = new Date(clockNow()).toUTCString();
    await createNotification(
      { kind: "user", userId },
      {
        type: "newSignIn",
        title: "New sign-in",
        message: `Your account was signed in to from ${browserOf(userAgent)} on ${at}. If that was not you, reset your password: that signs every session out.`,
      },
    );
  }
  const deviceHash = sha256(value);
  await putDevice({
    ...keys.userDevice(userId, deviceHash),
    entity: "device",
    userId,
    deviceHash,
    lastSignInAt: nowIso(),
    TTL: nowSeconds() + DEVICE_SECONDS,
  });
  return value;
}

/** Start a session of `userId` (the user signed in: a password, or a passkey, lib/domain/passkeys.ts); answers the cookie's value. */
export async function startSession(userId: string, userAgent?: string): Promise<string> {
  const secret = randomBytes(32).toString("base64url");
  const secretHash = sha256(secret);
  const now = nowSeconds();
  const absoluteExpiresAt = now + SESSION_ABSOLUTE_SECONDS;
  const session: SessionItem = {
    ...keys.session(userId, secretHash),
    entity: "session",
    userId,
    secretHash,
    sessionId: randomUUID(),
    createdAt: nowIso(),
    lastSeenAt: nowIso(),
    idleExpiresAt: now + SESSION_IDLE_SECONDS,
    absoluteExpiresAt,
    ...(userAgent ? { userAgent: userAgent.slice(0, 256) } : {}),
    TTL: absoluteExpiresAt,
  };
  await putSession(session);
  return `${userId}.${secret}`;
}

/** The session cookie's value in a `Cookie` header (either name), split into the user id and the secret. */
function sessionCookieOf(cookieHeader: string | undefined): { userId: string; secret: string } | undefined {
  for (const value of cookieValuesOf(cookieHeader, [sessionCookieName(true), sessionCookieName(false)])) {
    const match = /^([0-9a-f-]{36})\.([A-Za-z0-9_-]{43})$/.exec(value);
    if (match?.[1] && match[2]) return { userId: match[1], secret: match[2] };
  }
  return undefined;
}

/** SHA-256 of the session secret of a request's `Cookie` header (the session item's key), or undefined. */
export function sessionSecretHashOf(cookieHeader: string | undefined): string | undefined {
  const cookie = sessionCookieOf(cookieHeader);
  return cookie ? sha256(cookie.secret) : undefined;
}

/**
 * The signed-in user of a request's `Cookie` header, or undefined: no session cookie, an unknown
 * or revoked session, or one past its idle or absolute expiry. Use moves the idle expiry on. The
 * Core API's authorizer authenticates cookie requests with it (lib/domain/authorizer.ts).
 */
export async function sessionFromCookie(
  cookieHeader: string | undefined,
): Promise<{ user: UserItem; session: SessionItem } | undefined> {
  const cookie = sessionCookieOf(cookieHeader);
  if (!cookie) return undefined;
  // The cookie names its user: the session and the user are read in parallel (one round trip).
  const [session, user] = await Promise.all([
    findSession(cookie.userId, sha256(cookie.secret)),
    findUser(cookie.userId),
  ]);
  const now = nowSeconds();
  if (!session || session.idleExpiresAt <= now || session.absoluteExpiresAt <= now) return undefined;
  if (!user || user.userId !== session.userId) return undefined;
  if (now - Math.floor(Date.parse(session.lastSeenAt) / 1000) >= SESSION_TOUCH_SECONDS)
    // Best effort: a touch that fails (throttled, refused) never fails the request it records.
    await touchSession(
      session,
      nowIso(),
      Math.min(now + SESSION_IDLE_SECONDS, session.absoluteExpiresAt),
    ).catch((error: unknown) => log.warn("Session touch failed", describeError(error)));
  return { user, session };
}

/** A session as its user sees it (never its secret or the secret's hash). */
export function toApiSession(session: SessionItem, current: SessionItem) {
  return {
    sessionId: session.sessionId,
    sessionCreated: session.createdAt,
    sessionLastSeen: session.lastSeenAt,
    sessionIdleExpires: new Date(session.idleExpiresAt * 1000).toISOString(),
    sessionExpires: new Date(session.absoluteExpiresAt * 1000).toISOString(),
    userAgent: session.userAgent ?? "",
    current: session.secretHash === current.secretHash,
  };
}

/** The user's sessions still valid, newest first. */
export async function listUserSessions(userId: string): Promise<SessionItem[]> {
  const now = nowSeconds();
  const sessions = await listSessions(userId);
  return sessions
    .filter((session) => session.idleExpiresAt > now && session.absoluteExpiresAt > now)
    .sort((a, b) => b.createdAt.localeCompare(a.createdAt));
}

/** Revoke one of the user's sessions by its id: false when the user has no such session. */
export async function revokeUserSession(userId: string, sessionId: string): Promise<boolean> {
  const session = (await listSessions(userId)).find((candidate) => candidate.sessionId === sessionId);
  if (!session) return false;
  await deleteSession(userId, session.secretHash);
  return true;
}

/** Revoke the request's session on the server (nothing when there is none). */
export async function signOut(cookieHeader: string | undefined): Promise<void> {
  const cookie = sessionCookieOf(cookieHeader);
  if (cookie) await deleteSession(cookie.userId, sha256(cookie.secret));
}

/**
 * An operator's first password for a user without an account (the local operator account of
 * `npm start`): the account is created verified. False when the user has an account already.
 */
export async function setFirstPassword(userId: string, password: string): Promise<boolean> {
  const now = nowIso();
  return putNewAccount({
    ...keys.userAccount(userId),
    entity: "account",
    userId,
    passwordHash: await hashPassword(password),
    emailVerified: true,
    passwordChanged: now,
    accountCreated: now,
  });
}
