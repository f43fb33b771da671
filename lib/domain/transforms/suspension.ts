/**
 * Suspension of a transform that keeps costing the sandbox its worker (issue 19; docs/transforms.md
 * "Suspension"). A call killed at the hard deadline (or failing in the host) costs a worker restart
 * and makes every other transform on the instance wait and compile again; a transform that does so
 * `kills` times within `windowMs` is suspended for a cool-down: its calls answer transform-error at once, without
 * running. A repeat (a new suspension starting less than `resetAfterMs` after the last one ended)
 * doubles the cool-down, up to `maxCooldownMs`.
 *
 * Pure: the state of one transform version goes in with the time and comes out changed; the sandbox
 * (lib/data-plane/sandbox.ts) keeps one state per transform id and code hash on the instance.
 */

export interface SuspensionPolicy {
  /** Kills (calls that cost the worker) within the window that suspend; 0 turns suspension off. */
  kills: number;
  windowMs: number;
  /** The first suspension's cool-down. */
  cooldownMs: number;
  /** The longest cool-down of a repeat. */
  maxCooldownMs: number;
  /** A suspension starting this long or more after the last one ended starts again at `cooldownMs`. */
  resetAfterMs: number;
}

export const DEFAULT_SUSPENSION_POLICY: SuspensionPolicy = {
  kills: 3,
  windowMs: 60_000,
  cooldownMs: 60_000,
  maxCooldownMs: 16 * 60_000,
  resetAfterMs: 60 * 60_000,
};

export interface SuspensionState {
  /** Times (ms) of the kills in the current window, oldest first. */
  kills: readonly number[];
  /** End (ms) of the current or last suspension; 0 when never suspended. */
  until: number;
  /** Cool-down of the current or last suspension; 0 when never suspended. */
  cooldownMs: number;
}

export const NOT_SUSPENDED: SuspensionState = { kills: [], until: 0, cooldownMs: 0 };

/** A suspension: until when (ms) and its cool-down. */
export interface Suspension {
  until: number;
  cooldownMs: number;
}

/** The suspension in force at `now`, if any. */
export function suspensionAt(state: SuspensionState, now: number): Suspension | undefined {
  return now < state.until ? { until: state.until, cooldownMs: state.cooldownMs } : undefined;
}

/**
 * The state after a kill at `now`, and the suspension it starts, if any. A kill while suspended
 * (a call that began before the suspension) changes nothing.
 */
export function afterKill(
  state: SuspensionState,
  now: number,
  policy: SuspensionPolicy,
): { state: SuspensionState; started?: Suspension } {
  if (policy.kills <= 0 || now < state.until) return { state };
  const kills = [...state.kills.filter((at) => now - at < policy.windowMs), now];
  if (kills.length < policy.kills) return { state: { ...state, kills } };
  const repeat = state.until > 0 && now - state.until < policy.resetAfterMs;
  const cooldownMs = repeat
    ? Math.min(state.cooldownMs * 2, policy.maxCooldownMs)
    : Math.min(policy.cooldownMs, policy.maxCooldownMs);
  const until = now + cooldownMs;
  return { state: { kills: [], until, cooldownMs }, started: { until, cooldownMs } };
}

/** Whether the state says nothing any more at `now` (no kill in the window, no suspension to double). */
export function isForgotten(state: SuspensionState, now: number, policy: SuspensionPolicy): boolean {
  const lastKill = state.kills[state.kills.length - 1];
  return (
    (lastKill === undefined || now - lastKill >= policy.windowMs) &&
    (state.until === 0 || now - state.until >= policy.resetAfterMs)
  );
}

/**
 * Records a kill of the transform version `key` at `now` in an instance's states, and answers the
 * suspension it starts, if any. The states stay at most `max`: over it, those with nothing left to
 * say (isForgotten) are dropped, then the oldest (a Map keeps insertion order; a kill moves its
 * version to the newest end).
 */
export function recordKill(
  states: Map<string, SuspensionState>,
  key: string,
  now: number,
  policy: SuspensionPolicy,
  max: number,
): Suspension | undefined {
  const { state, started } = afterKill(states.get(key) ?? NOT_SUSPENDED, now, policy);
  states.delete(key);
  states.set(key, state);
  if (states.size > max) {
    for (const [other, otherState] of states) if (isForgotten(otherState, now, policy)) states.delete(other);
    for (const other of states.keys()) {
      if (states.size <= max) break;
      states.delete(other);
    }
  }
  return started;
}

/** The policy from the environment (a bad value fails loudly, naming the variable). */
export function suspensionPolicy(env: NodeJS.ProcessEnv = process.env): SuspensionPolicy {
  const read = (name: string, fallback: number, min: number, max: number) => {
    const raw = env[name];
    if (raw === undefined || raw === "") return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min || value > max)
      throw new Error(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
    return value;
  };
  const day = 86_400_000;
  const cooldownMs = read("TRANSFORM_SUSPEND_COOLDOWN_MS", DEFAULT_SUSPENSION_POLICY.cooldownMs, 1, day);
  return {
    kills: read("TRANSFORM_SUSPEND_KILLS", DEFAULT_SUSPENSION_POLICY.kills, 0, 1000),
    windowMs: read("TRANSFORM_SUSPEND_WINDOW_MS", DEFAULT_SUSPENSION_POLICY.windowMs, 1, day),
    cooldownMs,
    maxCooldownMs: Math.max(
      cooldownMs,
      read("TRANSFORM_SUSPEND_MAX_COOLDOWN_MS", DEFAULT_SUSPENSION_POLICY.maxCooldownMs, 1, day),
    ),
    resetAfterMs: DEFAULT_SUSPENSION_POLICY.resetAfterMs,
  };
}

/** The sentence of a suspended call's failure (printable ASCII). */
export function suspendedMessage(suspension: Suspension, policy: SuspensionPolicy): string {
  return (
    `suspended until ${new Date(suspension.until).toISOString()} (cool-down ${Math.round(suspension.cooldownMs / 1000)} s) ` +
    `after ${policy.kills} calls that cost the sandbox its worker (past the hard deadline, or a host failure) ` +
    `within ${Math.round(policy.windowMs / 1000)} s on this instance; it runs again then, or at once when its code changes`
  );
}
