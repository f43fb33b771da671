/** Users (spec 4.4): dispatch derived from the operation registry (lib/api/operations/users.ts). */
import { createOperationHandler } from "#lib/api/dispatch.ts";
import { userOperations } from "#lib/api/operations/users.ts";

export const operations = userOperations;
export const handler = createOperationHandler(operations);
