/**
 * Account recovery after a password reset (docs/accounts.md "Recovery"): the reset ends
 * every session, API token and MCP grant (lib/domain/accounts.ts `resetPassword`); the passkeys
 * are not removed (the owner may want them), but listed in the answer and the "Your password was
 * changed" e-mail, each with a one-click removal. The removal is authorised by a recovery token:
 * 32 random bytes (base64url) made by the reset, stored only as its SHA-256 under the user for
 * 24 hours, good for removing that user's passkeys and nothing else. The e-mail's link only opens
 * a console page (mail scanners follow links): the removal is the page's POST.
 */
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { now as clockNow } from "#lib/clock.ts";
import { getConfig } from "#lib/config.ts";
import { findRecoveryToken, putRecoveryToken } from "#lib/db/entities/account.ts";
import { keys } from "#lib/db/keys.ts";
import { nowIso } from "#lib/db/store.ts";
import { sendEmail, textToHtml } from "#lib/email.ts";
import { badRequest } from "#lib/shared/errors.ts";
import { describeRevoked, resetPassword } from "./accounts.ts";
import { listUserPasskeys, removeUserPasskey, toApiPasskey } from "./passkeys.ts";
import type { RevokedCounts } from "./revocation.ts";
import { findUserIdByEmail } from "./users.ts";

export const RECOVERY_TOKEN_LIFETIME_SECONDS = 24 * 3600;
export const INVALID_LINK_MESSAGE = "Invalid or expired link";
export const PASSKEY_REMOVED_MESSAGE = "Passkey removed";

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");
const nowSeconds = () => Math.floor(clockNow() / 1000);
/** A user id that is nobody's: an unknown address looks its token up under it (the same work). */
const NOBODY = randomUUID();

export type ApiPasskey = ReturnType<typeof toApiPasskey>;

export interface CompletedReset {
  revoked: RevokedCounts;
  passkeys: ApiPasskey[];
  /** Shown once, in the reset's answer and e-mail; only its SHA-256 is stored. */
  recoveryToken: string;
}

/**
 * A password reset with its code (lib/domain/accounts.ts `resetPassword`: the password, and every
 * session, token and grant revoked), then the passkeys' recovery token and the "Your password was
 * changed" e-mail. Undefined for a wrong, used, void or expired code.
 */
export async function completePasswordReset(input: {
  email: string;
  code: string;
  password: string;
}): Promise<CompletedReset | undefined> {
  const reset = await resetPassword(input);
  if (!reset) return undefined;
  const passkeys = (await listUserPasskeys(reset.userId)).map(toApiPasskey);
  const recoveryToken = randomBytes(32).toString("base64url");
  const tokenHash = sha256(recoveryToken);
  const expiresAt = nowSeconds() + RECOVERY_TOKEN_LIFETIME_SECONDS;
  await putRecoveryToken({
    ...keys.recoveryToken(reset.userId, tokenHash),
    entity: "recoveryToken",
    userId: reset.userId,
    tokenHash,
    createdAt: nowIso(),
    expiresAt,
    TTL: expiresAt,
  });
  await sendPasswordChanged(reset.email, reset.revoked, passkeys, recoveryToken);
  return { revoked: reset.revoked, passkeys, recoveryToken };
}

/** The removal link of a passkey in the e-mail: it opens the console's page, which asks before it removes. */
export const removePasskeyLink = (email: string, passkeyId: string, recoveryToken: string) =>
  `${getConfig().appUrl}/remove-passkey?${new URLSearchParams({ email, passkeyId, token: recoveryToken })}`;

async function sendPasswordChanged(
  email: string,
  revoked: RevokedCounts,
  passkeys: ApiPasskey[],
  recoveryToken: string,
) {
  const { appUrl } = getConfig();
  const passkeyLines =
    passkeys.length === 0
      ? ["Your account has no passkeys."]
      : [
          "Passkeys sign in without the password, so a reset does not remove them. Your account has these; remove any you do not recognise (each link opens a page that asks before removing, and works for 24 hours):",
          "",
          ...passkeys.map(
            (passkey) =>
              `- ${passkey.passkeyName}, added ${passkey.passkeyCreated}: ${removePasskeyLink(email, passkey.passkeyId, recoveryToken)}`,
          ),
        ];
  const text = [
    "The password of your account was just reset with a code sent to this address.",
    "",
    `Signed out and revoked: ${describeRevoked(revoked)}. Whoever used them must sign in again with the new password; create new API tokens where you need them.`,
    "",
    ...passkeyLines,
    "",
    `If you did not reset your password, reset it again at ${appUrl}/forgot-password.`,
    "\n--",
    `Sent by the API gateway at ${appUrl} because the password of the account of this address was reset.`,
  ].join("\n");
  await sendEmail({ to: email, subject: "Your password was changed", text, html: textToHtml(text) });
}

/**
 * Remove one of a user's passkeys with a reset's recovery token, without a session. A wrong or
 * expired token, or an unknown address, is the same 400 after the same work (no enumeration); a
 * passkey that is not that user's is a 404 (lib/domain/passkeys.ts `removeUserPasskey`, which also
 * keeps the user a way in and notifies them). The token stays good for the user's other passkeys
 * until it expires.
 */
export async function removePasskeyWithRecoveryToken(input: {
  email: string;
  passkeyId: string;
  recoveryToken: string;
}): Promise<void> {
  const userId = await findUserIdByEmail(input.email.trim().toLowerCase());
  const token = await findRecoveryToken(userId ?? NOBODY, sha256(input.recoveryToken), nowSeconds());
  if (!userId || !token || token.userId !== userId) throw badRequest(INVALID_LINK_MESSAGE);
  await removeUserPasskey(userId, input.passkeyId);
}
