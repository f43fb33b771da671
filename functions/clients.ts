/**
 * Clients (spec 4.1) and their plan limit overrides (docs/filters.md): dispatch derived from the
 * operation registry (lib/api/operations/clients.ts, lib/api/operations/filters.ts).
 */
import { createOperationHandler } from "#lib/api/dispatch.ts";
import { clientOperations } from "#lib/api/operations/clients.ts";
import { limitOverrideOperations } from "#lib/api/operations/filters.ts";

export const operations = [...clientOperations, ...limitOverrideOperations];
export const handler = createOperationHandler(operations);
