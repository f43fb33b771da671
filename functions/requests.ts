/** Request logs (spec 4.11): dispatch derived from the operation registry (lib/api/operations/requests.ts). */
import { createOperationHandler } from "#lib/api/dispatch.ts";
import { requestLogOperations } from "#lib/api/operations/requests.ts";

export const operations = requestLogOperations;
export const handler = createOperationHandler(operations);
