/**
 * Ending every way in to an account at once (docs/accounts.md "Recovery"): a password
 * reset, a password change (with "sign out everywhere else"), and a scheduled deletion revoke every
 * session, every API token and every MCP OAuth grant of the user with this one function.
 *
 * Each kind is revoked by deleting the item its check reads on every request: the session item
 * (the authorizer, `sessionFromCookie`), the token item and the user's token map (the authorizer,
 * the MCP endpoint), the grant (the token endpoint, the MCP endpoint, which also require the API
 * token the grant is bound to). So nothing here is half-written in a way that leaves a door open:
 * a credential is either gone or untouched, and a failure part-way is finished by running it again
 * (every step is idempotent). A credential made while it runs (a session or token created with
 * one not revoked yet) is caught by the next round: it reads again until nothing is left.
 */
import { deleteSessionsOfUser, listSessions } from "#lib/db/entities/account.ts";
import { revokeGrantsOfUser } from "#lib/db/entities/oauth-grant.ts";
import { findUser } from "#lib/db/entities/user.ts";
import { log } from "#lib/log.ts";
import { revokeTokensOf } from "./tokens.ts";

export interface RevokedCounts {
  sessions: number;
  tokens: number;
  grants: number;
}

/** Rounds before giving up on a user whose credentials keep appearing (each round revokes what it found). */
const MAX_ROUNDS = 5;

/**
 * Revoke every session (but the one of `keepSessionHash`, the SHA-256 of its secret), every API
 * token and every OAuth grant of `userId`; answers how many of each were revoked. Sessions go first
 * (a session can make tokens), then tokens (which also ends the grants bound to them), then the
 * grants themselves.
 */
export async function revokeEveryWayIn(
  userId: string,
  options: { keepSessionHash?: string } = {},
): Promise<RevokedCounts> {
  const revoked: RevokedCounts = { sessions: 0, tokens: 0, grants: 0 };
  const keepSecretHash = options.keepSessionHash;
  for (let round = 0; round < MAX_ROUNDS; round += 1) {
    revoked.sessions += await deleteSessionsOfUser(userId, { keepSecretHash });
    const user = await findUser(userId);
    if (user) revoked.tokens += await revokeTokensOf(user);
    revoked.grants += await revokeGrantsOfUser(userId);
    const [sessions, after] = await Promise.all([listSessions(userId), findUser(userId)]);
    const left =
      sessions.some((session) => session.secretHash !== keepSecretHash) ||
      Object.keys(after?.tokens ?? {}).length > 0;
    if (!left) {
      log.info("Every way in revoked", { userId, ...revoked, kept: keepSecretHash ? 1 : 0 });
      return revoked;
    }
  }
  throw new Error(`Revocation of user ${userId} did not settle: new credentials kept appearing`);
}
