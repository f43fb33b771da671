/**
 * The suspension policy of transforms killed at the hard deadline (docs/transforms.md
 * "Suspension"), a plain function: kills in a window, the cool-down doubling on a repeat up to a
 * bound, reset after a calm hour, the environment's figures; and the notification the stream
 * consumer writes from a suspending request log.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { handler as regionStream } from "#functions/region-stream.ts";
import { getConfig } from "#lib/config.ts";
import { listNotificationsOfInbox } from "#lib/db/entities/notification.ts";
import { suspensionNotification, TRANSFORM_SUSPENDED_TYPE } from "#lib/domain/transform-suspension-alerts.ts";
import {
  afterKill,
  isForgotten,
  NOT_SUSPENDED,
  DEFAULT_SUSPENSION_POLICY as POLICY,
  recordKill,
  type SuspensionState,
  suspendedMessage,
  suspensionAt,
  suspensionPolicy,
} from "#lib/domain/transforms/suspension.ts";
import { provisionTable } from "#local/provision.ts";
import { insertRecord, sequenceFrom } from "#test/support/stream-records.ts";

const T0 = Date.UTC(2026, 10, 26, 12);

/** Kills at the given times (ms after T0); the state and the suspensions they started. */
function killsAt(times: number[], state: SuspensionState = NOT_SUSPENDED, policy = POLICY) {
  const started = [];
  for (const at of times) {
    const next = afterKill(state, T0 + at, policy);
    state = next.state;
    if (next.started) started.push({ at, ...next.started });
  }
  return { state, started };
}

describe("transform suspension policy", () => {
  it("has the documented defaults: 3 kills within 60 s, 60 s cool-down doubling up to 16 min, reset after 1 h", () => {
    expect(POLICY).toEqual({
      kills: 3,
      windowMs: 60_000,
      cooldownMs: 60_000,
      maxCooldownMs: 960_000,
      resetAfterMs: 3_600_000,
    });
  });

  it("suspends on the third kill within the window, for the cool-down, then runs again", () => {
    const { state, started } = killsAt([0, 10_000, 59_000]);
    expect(started).toEqual([{ at: 59_000, until: T0 + 119_000, cooldownMs: 60_000 }]);
    expect(suspensionAt(state, T0 + 59_000)).toEqual({ until: T0 + 119_000, cooldownMs: 60_000 });
    expect(suspensionAt(state, T0 + 118_999)).toBeDefined();
    expect(suspensionAt(state, T0 + 119_000)).toBeUndefined();
    expect(state.kills).toEqual([]);
  });

  it("does not suspend for kills spread over more than the window", () => {
    const { state, started } = killsAt([0, 30_000, 60_000, 90_000, 120_001]);
    expect(started).toEqual([]);
    expect(suspensionAt(state, T0 + 120_001)).toBeUndefined();
    // Only the kills of the last 60 s are kept.
    expect(state.kills).toEqual([T0 + 90_000, T0 + 120_001]);
  });

  it("ignores a kill while suspended (a call begun before the suspension)", () => {
    const { state } = killsAt([0, 1, 2]);
    expect(afterKill(state, T0 + 1000, POLICY)).toEqual({ state });
  });

  it("doubles the cool-down on each repeat, up to 16 min", () => {
    let state: SuspensionState = NOT_SUSPENDED;
    let now = 0;
    const cooldowns: number[] = [];
    for (let round = 0; round < 7; round++) {
      const result = killsAt([now, now + 1, now + 2], state);
      state = result.state;
      cooldowns.push(result.started[0]!.cooldownMs);
      now = state.until - T0; // the bomb runs again at the end of the cool-down and is killed again
    }
    expect(cooldowns).toEqual([60_000, 120_000, 240_000, 480_000, 960_000, 960_000, 960_000]);
  });

  it("starts again at 60 s when the last suspension ended an hour or more before", () => {
    const first = killsAt([0, 1, 2]);
    const second = killsAt([200_000, 200_001, 200_002], first.state);
    expect(second.started[0]!.cooldownMs).toBe(120_000);
    const calm = second.state.until - T0 + POLICY.resetAfterMs;
    const third = killsAt([calm, calm + 1, calm + 2], second.state);
    expect(third.started[0]!.cooldownMs).toBe(60_000);
  });

  it("never suspends with kills 0 (off)", () => {
    const { started } = killsAt([0, 1, 2, 3, 4, 5], NOT_SUSPENDED, { ...POLICY, kills: 0 });
    expect(started).toEqual([]);
  });

  it("forgets a state once no kill is in the window and no suspension can double", () => {
    const { state } = killsAt([0]);
    expect(isForgotten(state, T0 + 59_999, POLICY)).toBe(false);
    expect(isForgotten(state, T0 + 60_000, POLICY)).toBe(true);
    const suspended = killsAt([0, 1, 2]).state;
    expect(isForgotten(suspended, suspended.until + POLICY.resetAfterMs - 1, POLICY)).toBe(false);
    expect(isForgotten(suspended, suspended.until + POLICY.resetAfterMs, POLICY)).toBe(true);
  });

  it("keeps an instance's states bounded: the forgotten ones dropped first, then the oldest", () => {
    const states = new Map<string, SuspensionState>();
    // Three kills at T0 (forgotten from T0 + 60 s), then two at T0 + 50 s.
    for (const key of ["a", "b", "c"]) recordKill(states, key, T0, POLICY, 4);
    for (const key of ["d", "e"]) recordKill(states, key, T0 + 50_000, POLICY, 4);
    // Over the bound at T0 + 50 s, none forgotten yet: the oldest (a) went.
    expect([...states.keys()]).toEqual(["b", "c", "d", "e"]);
    // Over the bound at T0 + 61 s: b and c say nothing any more (no kill in the last 60 s).
    expect(recordKill(states, "f", T0 + 61_000, POLICY, 4)).toBeUndefined();
    expect([...states.keys()]).toEqual(["d", "e", "f"]);
    // Nothing forgotten: the oldest goes; a kill moves its key to the newest end.
    recordKill(states, "d", T0 + 62_000, POLICY, 4);
    recordKill(states, "g", T0 + 63_000, POLICY, 4);
    recordKill(states, "h", T0 + 64_000, POLICY, 4);
    expect([...states.keys()]).toEqual(["f", "d", "g", "h"]);
    // A third kill of one key within the window starts its suspension.
    expect(recordKill(states, "d", T0 + 65_000, POLICY, 4)).toEqual({
      until: T0 + 125_000,
      cooldownMs: 60_000,
    });
    expect(states.get("d")).toEqual({ kills: [], until: T0 + 125_000, cooldownMs: 60_000 });
  });

  it("reads its figures from the environment, and refuses a bad value naming the variable", () => {
    expect(suspensionPolicy({})).toEqual(POLICY);
    expect(
      suspensionPolicy({
        TRANSFORM_SUSPEND_KILLS: "5",
        TRANSFORM_SUSPEND_WINDOW_MS: "10000",
        TRANSFORM_SUSPEND_COOLDOWN_MS: "30000",
        TRANSFORM_SUSPEND_MAX_COOLDOWN_MS: "120000",
      }),
    ).toEqual({ ...POLICY, kills: 5, windowMs: 10_000, cooldownMs: 30_000, maxCooldownMs: 120_000 });
    expect(suspensionPolicy({ TRANSFORM_SUSPEND_KILLS: "0" }).kills).toBe(0);
    // The bound is never below the first cool-down.
    expect(suspensionPolicy({ TRANSFORM_SUSPEND_MAX_COOLDOWN_MS: "1000" }).maxCooldownMs).toBe(60_000);
    expect(() => suspensionPolicy({ TRANSFORM_SUSPEND_KILLS: "-1" })).toThrow(/TRANSFORM_SUSPEND_KILLS/);
    expect(() => suspensionPolicy({ TRANSFORM_SUSPEND_COOLDOWN_MS: "1.5" })).toThrow(
      /TRANSFORM_SUSPEND_COOLDOWN_MS must be an integer/,
    );
  });

  it("says until when, why and how it ends, in printable ASCII", () => {
    const message = suspendedMessage({ until: T0 + 60_000, cooldownMs: 60_000 }, POLICY);
    expect(message).toBe(
      "suspended until 2026-11-26T12:01:00.000Z (cool-down 60 s) after 3 calls that cost the sandbox its worker (past the hard deadline, or a host failure) within 60 s on this instance; it runs again then, or at once when its code changes",
    );
    expect(message).toMatch(/^[\x20-\x7e]+$/);
  });
});

describe("transform suspension notification", () => {
  beforeAll(async () => {
    // The home table (the inbox) and the region's (the meter-alert processor reads the same batch).
    await Promise.all(getConfig().regions.map((region) => provisionTable(region, getConfig().tableName)));
  });

  const logged = {
    entity: "requestLog" as const,
    requestId: "r-1",
    clientId: "c-1",
    proxyId: "p-1",
    transformSuspension: {
      transformId: "t-1",
      kind: "request",
      until: "2026-11-26T12:01:00.000Z",
      cooldownMs: 60_000,
    },
  };

  it("is a client notification naming the transform, the proxy, until when and the request, with a stable id", () => {
    const notification = suspensionNotification(logged, "eu-west-1", "2026-11-26T12:00:01.000Z");
    expect(notification.pKey).toContain("c-1");
    expect(notification.type).toBe(TRANSFORM_SUSPENDED_TYPE);
    expect(notification.title).toBe("Transform suspended: request transform t-1");
    expect(notification.message).toContain("proxy p-1");
    expect(notification.message).toContain("until 2026-11-26T12:01:00.000Z");
    expect(notification.message).toContain("Request r-1");
    expect(notification.data).toMatchObject({ transformId: "t-1", until: logged.transformSuspension.until });
    // Timestamped at the suspension's start; the same log always gives the same id.
    expect(Number.parseInt(notification.notificationId.replace(/-/g, "").slice(0, 12), 16)).toBe(T0);
    expect(suspensionNotification(logged, "eu-west-1").notificationId).toBe(notification.notificationId);
    expect(suspensionNotification({ ...logged, requestId: "r-2" }, "eu-west-1").notificationId).not.toBe(
      notification.notificationId,
    );
  });

  it("is written once by the region stream consumer (emulator), however often the record comes; other logs write none", async () => {
    const clientId = `c-${crypto.randomUUID()}`;
    const region = "eu-west-1";
    const next = sequenceFrom(7_190_000_000n);
    const base = { pKey: "REQ#p-1", entity: "requestLog", clientId, proxyId: "p-1", processedAt: T0 };
    const suspending = { ...logged, ...base, sKey: "r-1", clientId };
    const plain = { ...base, sKey: "r-2", requestId: "r-2" };
    const record = insertRecord(suspending, { region, at: T0, sequenceNumber: next() });
    const first = await regionStream({
      Records: [record, insertRecord(plain, { region, at: T0, sequenceNumber: next() })],
    });
    expect(first.batchItemFailures).toEqual([]);
    // Redelivered (a retry after a later record failed, say): nothing more.
    expect((await regionStream({ Records: [record] })).batchItemFailures).toEqual([]);
    const inbox = await listNotificationsOfInbox({ kind: "client", clientId });
    expect(inbox.map((item) => [item.type, item.data?.requestId])).toEqual([
      [TRANSFORM_SUSPENDED_TYPE, "r-1"],
    ]);
  });
});
