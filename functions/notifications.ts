/** Notifications (spec 4.12): dispatch derived from the operation registry (lib/api/operations/notifications.ts). */
import { createOperationHandler } from "#lib/api/dispatch.ts";
import { notificationOperations } from "#lib/api/operations/notifications.ts";

export const operations = notificationOperations;
export const handler = createOperationHandler(operations);
