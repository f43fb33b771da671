/** Request and response transforms on a proxy (spec 4.10): dispatch derived from the operation registry (lib/api/operations/transforms.ts). */
import { createOperationHandler } from "#lib/api/dispatch.ts";
import { transformOperations } from "#lib/api/operations/transforms.ts";

export const operations = transformOperations;
export const handler = createOperationHandler(operations);
