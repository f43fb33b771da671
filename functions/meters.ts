/** Meters on a proxy (spec 4.9): dispatch derived from the operation registry (lib/api/operations/meters.ts). */
import { createOperationHandler } from "#lib/api/dispatch.ts";
import { meterOperations } from "#lib/api/operations/meters.ts";

export const operations = meterOperations;
export const handler = createOperationHandler(operations);
