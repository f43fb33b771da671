/**
 * The MSP API (spec 4.14) and the MSP's payment method: dispatch derived from the operation
 * registry (lib/api/operations/msps.ts, lib/api/operations/billing.ts).
 */
import { createOperationHandler } from "#lib/api/dispatch.ts";
import { mspBillingOperations } from "#lib/api/operations/billing.ts";
import { mspOperations } from "#lib/api/operations/msps.ts";

export const operations = [...mspOperations, ...mspBillingOperations];
export const handler = createOperationHandler(operations);
