/** Invites (spec 4.3): dispatch derived from the operation registry (lib/api/operations/invites.ts). */
import { createOperationHandler } from "#lib/api/dispatch.ts";
import { inviteOperations } from "#lib/api/operations/invites.ts";

export const operations = inviteOperations;
export const handler = createOperationHandler(operations);
