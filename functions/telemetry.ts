/** Telemetry reads (spec 4.1, 4.7): dispatch derived from the operation registry (lib/api/operations/telemetry.ts). */
import { createOperationHandler } from "#lib/api/dispatch.ts";
import { telemetryOperations } from "#lib/api/operations/telemetry.ts";

export const operations = telemetryOperations;
export const handler = createOperationHandler(operations);
