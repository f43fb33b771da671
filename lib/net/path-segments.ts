/**
 * True when the path has a segment the URL parser would resolve: `.` or `..` in any spelling
 * (`%2e`, `%2E.`), or a backslash, which WHATWG URLs treat as `/` for http(s). Joined to the target's
 * base URL such a path would climb out of the base path (`/v1/tenant-a/%2e%2e/tenant-b`) and reach
 * the target as a path the access rules never saw (`/x/..%2fadmin` is fine: `%2f` stays a
 * character). The data plane refuses them.
 */
export function hasDotSegment(apiPath: string): boolean {
  if (apiPath.includes("\\")) return true;
  return apiPath.split("/").some((segment) => {
    const plain = segment.replace(/%2e/gi, ".");
    return plain === "." || plain === "..";
  });
}
