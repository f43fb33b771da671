/**
 * The pages under /organisations/{clientId}: a path pattern, the page's title and its component,
 * loaded on first visit (each area is its own chunk, so the editor and the charts load only where
 * they are used). Each component gets the pattern's parameters and the signed-in user.
 */
import { type ComponentType, lazy } from "react";
import { OrganisationNotifications } from "./pages/notifications";

export interface OrgPageProps {
  clientId: string;
  /** The pattern's parameters (clientId included). */
  params: Record<string, string>;
  user: { userId: string };
}

export interface OrgRoute {
  pattern: string;
  title: string;
  page: ComponentType<OrgPageProps>;
}

/** A page loaded on first use: `name` is the component's export in the module. */
const page = <M extends { [K in N]: ComponentType<OrgPageProps> }, N extends keyof M & string>(
  load: () => Promise<M>,
  name: N,
): ComponentType<OrgPageProps> =>
  lazy(async (): Promise<{ default: ComponentType<OrgPageProps> }> => ({ default: (await load())[name] }));

const proxies = () => import("./pages/proxies");
const targets = () => import("./pages/targets");
const credentials = () => import("./pages/credentials");
const requestLogs = () => import("./pages/request-logs");
const telemetry = () => import("./pages/telemetry");

/** Matched in order: the first pattern that matches the path wins (put /new before /{id}). */
export const ORG_ROUTES: OrgRoute[] = [
  // --- proxies: list, wizard, one proxy and its rules, filters, overrides ---
  { pattern: "/organisations/{clientId}/proxies", title: "Proxies", page: page(proxies, "ProxiesPage") },
  // --- end of proxies ---

  // --- meters and transforms of a proxy ---
  // --- end of meters and transforms ---

  // --- targets ---
  { pattern: "/organisations/{clientId}/targets", title: "Targets", page: page(targets, "TargetsPage") },
  // --- end of targets ---

  // --- credentials ---
  {
    pattern: "/organisations/{clientId}/credentials",
    title: "Credentials",
    page: page(credentials, "CredentialsPage"),
  },
  // --- end of credentials ---

  // --- request logs ---
  {
    pattern: "/organisations/{clientId}/request-logs",
    title: "Request logs",
    page: page(requestLogs, "RequestLogsPage"),
  },
  // --- end of request logs ---

  // --- telemetry ---
  {
    pattern: "/organisations/{clientId}/telemetry",
    title: "Telemetry",
    page: page(telemetry, "TelemetryPage"),
  },
  // --- end of telemetry ---

  // --- the organisation's notifications ---
  {
    pattern: "/organisations/{clientId}/notifications",
    title: "Notifications",
    // Already in the first chunk (the header's unread count uses its module).
    page: OrganisationNotifications,
  },
  // --- end of notifications ---
];
