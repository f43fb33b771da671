/** The organisation's telemetry (issue 23: being built; this page is the frame's placeholder). */
import type { OrgPageProps } from "../org-routes";

export function TelemetryPage(_props: OrgPageProps) {
  return <h1>Telemetry</h1>;
}
