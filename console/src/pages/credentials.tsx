/** The organisation's credentials (issue 23: being built; this page is the frame's placeholder). */
import type { OrgPageProps } from "../org-routes";

export function CredentialsPage(_props: OrgPageProps) {
  return <h1>Credentials</h1>;
}
