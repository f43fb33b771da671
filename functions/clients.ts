/** Clients (spec 4.1): dispatch derived from the operation registry (lib/api/operations/clients.ts). */
import { createOperationHandler } from "#lib/api/dispatch.ts";
import { clientOperations } from "#lib/api/operations/clients.ts";

export const operations = clientOperations;
export const handler = createOperationHandler(operations);
