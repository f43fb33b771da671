/** Accounts (issue 21) and passkeys (issue 22): sign-up, verification, sessions, password reset, passkeys; dispatch derived from the registry (lib/api/operations/auth.ts, passkeys.ts). */
import { createOperationHandler } from "#lib/api/dispatch.ts";
import { authGroupMiddleware, authOperations } from "#lib/api/operations/auth.ts";
import { passkeyOperations } from "#lib/api/operations/passkeys.ts";

export const operations = [...authOperations, ...passkeyOperations];
/** The per-IP limit of `/auth/*` and the answers' several cookies: lib/api/operations/auth.ts. */
export const handler = createOperationHandler(operations).use(authGroupMiddleware());
