/** The organisation's targets (issue 23: being built; this page is the frame's placeholder). */
import type { OrgPageProps } from "../org-routes";

export function TargetsPage(_props: OrgPageProps) {
  return <h1>Targets</h1>;
}
