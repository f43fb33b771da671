/** Credentials (spec 4.5): dispatch derived from the operation registry (lib/api/operations/credentials.ts). */
import { createOperationHandler } from "#lib/api/dispatch.ts";
import { credentialOperations } from "#lib/api/operations/credentials.ts";

export const operations = credentialOperations;
export const handler = createOperationHandler(operations);
