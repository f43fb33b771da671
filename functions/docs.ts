/** The API's documentation (OpenAPI document, reference page): dispatch derived from the registry (lib/api/operations/docs.ts). */
import { createOperationHandler } from "#lib/api/dispatch.ts";
import { docsOperations } from "#lib/api/operations/docs.ts";

export const operations = docsOperations;
export const handler = createOperationHandler(operations);
