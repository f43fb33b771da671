/**
 * Proxies (spec 4.7) and their filters and overrides (docs/filters.md): dispatch derived from the
 * operation registry (lib/api/operations/proxies.ts, lib/api/operations/filters.ts).
 */
import { createOperationHandler } from "#lib/api/dispatch.ts";
import { proxyPolicyOperations } from "#lib/api/operations/filters.ts";
import { proxyOperations } from "#lib/api/operations/proxies.ts";

export const operations = [...proxyOperations, ...proxyPolicyOperations];
export const handler = createOperationHandler(operations);
