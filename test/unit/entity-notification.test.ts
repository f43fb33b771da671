/** The notification entity: reading a stored notification and read receipt as typed fields, refusing wrong ones. */
import { describe, expect, it } from "vitest";
import {
  notificationItemOf,
  notificationKeys,
  notificationReceiptItemOf,
} from "#lib/db/entities/notification.ts";

describe("the notification entity", () => {
  const id = "0190a5d2-0000-7000-8000-000000000001";
  const stored = {
    ...notificationKeys.item({ kind: "client", clientId: "c" }, id),
    entity: "notification",
    notificationId: id,
    type: "billing",
    title: "Invoice due",
    message: "About the invoice",
    read: true,
    readAt: "2026-01-02T00:00:00.000Z",
    createdAt: "2026-01-01T00:00:00.000Z",
    TTL: 1_800_000_000,
  };

  it("keys each inbox apart", () => {
    expect(stored).toMatchObject({ pKey: "NOTIFY#CLIENT#c", sKey: id });
    expect(notificationKeys.inbox({ kind: "system" })).toBe("NOTIFY#SYSTEM");
    expect(notificationKeys.inbox({ kind: "user", userId: "u" })).toBe("NOTIFY#USER#u");
    expect(notificationKeys.receipt("u", id)).toEqual({ pKey: "NOTIFYREAD#u", sKey: id });
  });

  it("reads a stored notification as typed fields", () => {
    expect(notificationItemOf(stored)).toEqual(stored);
    // An unread one has no read time; an item without a read flag reads as unread.
    const { read: _read, readAt: _readAt, ...unread } = stored;
    expect(notificationItemOf(unread)).toEqual({ ...unread, read: false });
  });

  it("refuses an item that is not a notification, naming the field", () => {
    expect(() => notificationItemOf({ ...stored, TTL: "soon" })).toThrow(/TTL/);
    expect(() => notificationItemOf({ ...stored, read: "yes" })).toThrow(/read/);
    expect(() => notificationItemOf({ ...stored, entity: "invite" })).toThrow(/entity/);
    const { title: _title, ...noTitle } = stored;
    expect(() => notificationItemOf(noTitle)).toThrow(/title/);
  });

  it("reads a read receipt, refusing one without a read time", () => {
    const receipt = {
      ...notificationKeys.receipt("u", id),
      entity: "notificationReceipt",
      readAt: "2026-01-02T00:00:00.000Z",
      TTL: 1_800_000_000,
    };
    expect(notificationReceiptItemOf(receipt)).toEqual(receipt);
    const { readAt: _readAt, ...noReadAt } = receipt;
    expect(() => notificationReceiptItemOf(noReadAt)).toThrow(/readAt/);
  });
});
