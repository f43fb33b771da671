/** Placeholder: IETF RateLimit headers (replaced by the windows helper's module). */
import { type CalendarWindow, retryAfterSeconds, windowSeconds } from "./windows.ts";

export function rateLimitHeaders(input: {
  policy: string;
  limit: number;
  remaining: number;
  window: CalendarWindow;
  nowMs: number;
}): Record<string, string> {
  return {
    "ratelimit-policy": `"${input.policy}";q=${input.limit};w=${windowSeconds(input.window)}`,
    ratelimit: `"${input.policy}";r=${input.remaining};t=${retryAfterSeconds(input.nowMs, input.window)}`,
  };
}
