/** Accounts (issue 21): sign-up, verification, sessions, password reset; dispatch derived from the registry (lib/api/operations/auth.ts). */
import { createOperationHandler } from "#lib/api/dispatch.ts";
import { authGroupMiddleware, authOperations } from "#lib/api/operations/auth.ts";

export const operations = authOperations;
/** The per-IP limit of `/auth/*` and the answers' several cookies: lib/api/operations/auth.ts. */
export const handler = createOperationHandler(operations).use(authGroupMiddleware());
