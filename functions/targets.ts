/** Targets (spec 4.6): dispatch derived from the operation registry (lib/api/operations/targets.ts). */
import { createOperationHandler } from "#lib/api/dispatch.ts";
import { targetOperations } from "#lib/api/operations/targets.ts";

export const operations = targetOperations;
export const handler = createOperationHandler(operations);
