/**
 * Choosing an answer's media type from the request's `Accept` header (RFC 9110 12.5.1): each
 * offered type gets the quality of the most specific range that matches it (`type/subtype` over
 * `type/*` over `*\/*`); the highest quality above 0 wins, a tie goes to the type offered first.
 * No header, or nothing acceptable, answers the first offered type (the API does not answer 406).
 */

interface MediaRange {
  type: string;
  subtype: string;
  q: number;
}

function parseAccept(header: string): MediaRange[] {
  const ranges: MediaRange[] = [];
  for (const part of header.split(",")) {
    const [range, ...params] = part.split(";").map((piece) => piece.trim().toLowerCase());
    const [type, subtype] = (range ?? "").split("/");
    if (!type || !subtype) continue;
    let q = 1;
    for (const param of params) {
      const match = /^q=([01](?:\.\d{0,3})?)$/.exec(param.replaceAll(" ", ""));
      if (match) q = Math.min(1, Number(match[1]));
    }
    ranges.push({ type, subtype, q });
  }
  return ranges;
}

/** The quality of `offered` under `ranges`: the most specific matching range decides; none: 0. */
function qualityOf(offered: string, ranges: readonly MediaRange[]): number {
  const [type, subtype] = offered.toLowerCase().split("/");
  let best = { specificity: -1, q: 0 };
  for (const range of ranges) {
    const specificity =
      range.type === type && range.subtype === subtype
        ? 2
        : range.type === type && range.subtype === "*"
          ? 1
          : range.type === "*" && range.subtype === "*"
            ? 0
            : -1;
    if (specificity > best.specificity) best = { specificity, q: range.q };
  }
  return best.q;
}

export function preferredMediaType(
  accept: string | undefined,
  offered: readonly [string, ...string[]],
): string {
  if (!accept?.trim()) return offered[0];
  const ranges = parseAccept(accept);
  let chosen = offered[0];
  let chosenQ = 0;
  for (const type of offered) {
    const q = qualityOf(type, ranges);
    if (q > chosenQ) {
      chosen = type;
      chosenQ = q;
    }
  }
  return chosen;
}

/** A header's value whatever the case of its name (API Gateway passes names as the client sent them). */
export function headerValue(headers: Record<string, string | undefined> | null | undefined, name: string) {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers ?? {})) if (key.toLowerCase() === wanted) return value;
  return undefined;
}
