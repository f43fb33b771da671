/** Members (spec 4.2): dispatch derived from the operation registry (lib/api/operations/members.ts). */
import { createOperationHandler } from "#lib/api/dispatch.ts";
import { memberOperations } from "#lib/api/operations/members.ts";

export const operations = memberOperations;
export const handler = createOperationHandler(operations);
