/** The MSP API (spec 4.14): dispatch derived from the operation registry (lib/api/operations/msps.ts). */
import { createOperationHandler } from "#lib/api/dispatch.ts";
import { mspOperations } from "#lib/api/operations/msps.ts";

export const operations = mspOperations;
export const handler = createOperationHandler(operations);
