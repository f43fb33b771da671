/** Accounts (issue 21): sign-up, verification, sessions, password reset; dispatch derived from the registry (lib/api/operations/auth.ts). */
import { createOperationHandler } from "#lib/api/dispatch.ts";
import { authOperations } from "#lib/api/operations/auth.ts";

export const operations = authOperations;
export const handler = createOperationHandler(operations);
