/**
 * The time the gateway's windows and expiries are computed from (rate windows, counters, quotas,
 * token and key caches): the real clock (`Date.now`) in production, which never changes it. The
 * local stack takes another one for tests (`startLocalStack({ clock })`), so a test can place its
 * requests a few seconds into a minute instead of waiting for one. No imports: it is in the data
 * plane's cold-start bundle.
 */

let source: () => number = Date.now;

/** Milliseconds since the epoch, from the current clock. */
export const now = (): number => source();

/**
 * Use `clock` from now on (undefined: the real clock again) and return the one it replaces. The
 * local stack and tests only.
 */
export function setClock(clock?: () => number): () => number {
  const previous = source;
  source = clock ?? Date.now;
  return previous;
}
