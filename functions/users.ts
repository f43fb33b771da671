/**
 * Users (spec 4.4) and their own API tokens (issue 21): dispatch derived from the operation
 * registry (lib/api/operations/users.ts, lib/api/operations/tokens.ts).
 */
import { createOperationHandler } from "#lib/api/dispatch.ts";
import { tokenOperations } from "#lib/api/operations/tokens.ts";
import { userOperations } from "#lib/api/operations/users.ts";

export const operations = [...userOperations, ...tokenOperations];
export const handler = createOperationHandler(operations);
