/** The organisation's proxies (issue 23: being built; this page is the frame's placeholder). */
import type { OrgPageProps } from "../org-routes";

export function ProxiesPage(_props: OrgPageProps) {
  return <h1>Proxies</h1>;
}
