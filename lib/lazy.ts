/**
 * A module loaded on demand with `import()`, once: later calls get the same promise, so a hot path
 * does not pay the module resolution again on every request (docs/performance.md). A failed load
 * is tried again on the next call.
 */
export function loadOnce<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () =>
    (loading ??= load().catch((error: unknown) => {
      loading = undefined;
      throw error;
    }));
}
