/**
 * Editing a URL's query string pair by pair. `URLSearchParams` re-serialises every pair when one
 * changes (`%20` becomes `+`, `[` becomes `%5B`), but the gateway passes the caller's query to the
 * target unchanged (spec 4.13); these functions touch only the pairs they name.
 */

/** The decoded name of one `name=value` pair (the raw text when it is not valid percent-encoding). */
export function queryPairName(pair: string): string {
  const raw = pair.split("=", 1)[0] ?? "";
  try {
    return decodeURIComponent(raw.replaceAll("+", " "));
  } catch {
    return raw;
  }
}

function rewrite(url: URL, edit: (pairs: string[]) => string[]): void {
  if (url.search.length <= 1) {
    const added = edit([]);
    if (added.length > 0) url.search = added.join("&");
    return;
  }
  const pairs = url.search.slice(1).split("&");
  const next = edit(pairs);
  if (next.length !== pairs.length || next.some((pair, i) => pair !== pairs[i])) url.search = next.join("&");
}

/** Remove every pair named in `params`, then append `params` (encoded); other pairs are kept as they are. */
export function setQueryPairs(url: URL, params: Record<string, string> | undefined): void {
  const entries = Object.entries(params ?? {});
  if (entries.length === 0) return;
  const names = new Set(entries.map(([name]) => name));
  rewrite(url, (pairs) => [
    ...pairs.filter((pair) => pair !== "" && !names.has(queryPairName(pair))),
    ...entries.map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`),
  ]);
}

/** Remove every pair named in `names`; other pairs are kept as they are. */
export function removeQueryPairs(url: URL, names: readonly string[]): void {
  if (names.length === 0) return;
  const drop = new Set(names);
  rewrite(url, (pairs) => pairs.filter((pair) => !drop.has(queryPairName(pair))));
}

/** Replace the value of every pair named in `names` by `[redacted]`; other pairs are kept as they are. */
export function redactQueryPairs(url: URL, names: readonly string[]): void {
  if (names.length === 0) return;
  const secret = new Set(names);
  rewrite(url, (pairs) =>
    pairs.map((pair) => (secret.has(queryPairName(pair)) ? `${pair.split("=", 1)[0]}=[redacted]` : pair)),
  );
}
