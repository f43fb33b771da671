/** Proxies (spec 4.7): dispatch derived from the operation registry (lib/api/operations/proxies.ts). */
import { createOperationHandler } from "#lib/api/dispatch.ts";
import { proxyOperations } from "#lib/api/operations/proxies.ts";

export const operations = proxyOperations;
export const handler = createOperationHandler(operations);
