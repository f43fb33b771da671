/**
 * The types of notifications (spec 2.13; docs/accounts.md for the account ones), one list for the
 * writers (lib/domain/notifications.ts `createNotification`, the meter digests, the transform
 * suspension alerts), the API's schema (an enum in the
 * OpenAPI document) and the admin CLI's `--type` choices.
 */
export const NOTIFICATION_TYPES = [
  "system",
  "invitation",
  "billing",
  "usage",
  "transform-suspended",
  "passwordChanged",
  "newSignIn",
  "passkeyAdded",
  "passkeyRemoved",
] as const;
export type NotificationType = (typeof NOTIFICATION_TYPES)[number];

export const isNotificationType = (value: string): value is NotificationType =>
  (NOTIFICATION_TYPES as readonly string[]).includes(value);
