/**
 * Public webhooks (spec 6.2): dispatch derived from the operation registry
 * (lib/api/operations/webhooks.ts). The OAuth2 redirect is public: no token, no rate limit.
 */
import { createOperationHandler } from "#lib/api/dispatch.ts";
import { webhookOperations } from "#lib/api/operations/webhooks.ts";

export const operations = webhookOperations;
export const handler = createOperationHandler(operations);
