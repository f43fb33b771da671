/** The organisation's request logs (issue 23: being built; this page is the frame's placeholder). */
import type { OrgPageProps } from "../org-routes";

export function RequestLogsPage(_props: OrgPageProps) {
  return <h1>Request logs</h1>;
}
