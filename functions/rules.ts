/** Access rules on credentials, proxies and targets (spec 4.8): dispatch derived from the operation registry (lib/api/operations/rules.ts). */
import { createOperationHandler } from "#lib/api/dispatch.ts";
import { ruleOperations } from "#lib/api/operations/rules.ts";

export const operations = ruleOperations;
export const handler = createOperationHandler(operations);
