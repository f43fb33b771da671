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
const billing = () => import("./pages/billing");
const meters = () => import("./pages/meters");
const transforms = () => import("./pages/transforms");

/** Matched in order: the first pattern that matches the path wins (put /new before /{id}). */
export const ORG_ROUTES: OrgRoute[] = [
  // --- proxies: list, wizard, one proxy and its rules, filters, overrides ---
  { pattern: "/organisations/{clientId}/proxies", title: "Proxies", page: page(proxies, "ProxiesPage") },
  {
    pattern: "/organisations/{clientId}/proxies/new",
    title: "New proxy",
    page: page(() => import("./pages/proxies-wizard"), "NewProxyPage"),
  },
  {
    pattern: "/organisations/{clientId}/proxies/{proxyId}",
    title: "Proxy",
    page: page(proxies, "ProxyPage"),
  },
  // --- end of proxies ---

  // --- meters and transforms of a proxy ---
  {
    pattern: "/organisations/{clientId}/proxies/{proxyId}/meters",
    title: "Meters",
    page: page(meters, "MetersPage"),
  },
  {
    pattern: "/organisations/{clientId}/proxies/{proxyId}/meters/new",
    title: "New meter",
    page: page(meters, "MeterNewPage"),
  },
  {
    pattern: "/organisations/{clientId}/proxies/{proxyId}/meters/{meterId}",
    title: "Meter",
    page: page(meters, "MeterEditPage"),
  },
  {
    pattern: "/organisations/{clientId}/proxies/{proxyId}/transforms",
    title: "Transforms",
    page: page(transforms, "TransformsPage"),
  },
  {
    pattern: "/organisations/{clientId}/proxies/{proxyId}/transforms/{kind}/new",
    title: "New transform",
    page: page(transforms, "TransformNewPage"),
  },
  {
    pattern: "/organisations/{clientId}/proxies/{proxyId}/transforms/{kind}/{transformId}",
    title: "Transform",
    page: page(transforms, "TransformEditPage"),
  },
  // --- end of meters and transforms ---

  // --- targets ---
  { pattern: "/organisations/{clientId}/targets", title: "Targets", page: page(targets, "TargetsPage") },
  {
    pattern: "/organisations/{clientId}/targets/new",
    title: "New target",
    page: page(targets, "NewTargetPage"),
  },
  {
    pattern: "/organisations/{clientId}/targets/{targetId}",
    title: "Target",
    page: page(() => import("./pages/targets-detail"), "TargetPage"),
  },
  // --- end of targets ---

  // --- credentials ---
  {
    pattern: "/organisations/{clientId}/credentials",
    title: "Credentials",
    page: page(credentials, "CredentialsPage"),
  },
  {
    pattern: "/organisations/{clientId}/credentials/new",
    title: "New credential",
    page: page(credentials, "NewCredentialPage"),
  },
  {
    pattern: "/organisations/{clientId}/credentials/{credentialId}",
    title: "Credential",
    page: page(() => import("./pages/credentials-detail"), "CredentialPage"),
  },
  // --- end of credentials ---

  // --- request logs ---
  {
    pattern: "/organisations/{clientId}/request-logs",
    title: "Request logs",
    page: page(requestLogs, "RequestLogsPage"),
  },
  {
    pattern: "/organisations/{clientId}/request-logs/{proxyId}/{requestId}",
    title: "Request",
    page: page(requestLogs, "RequestLogPage"),
  },
  // --- end of request logs ---

  // --- telemetry ---
  {
    pattern: "/organisations/{clientId}/telemetry",
    title: "Telemetry",
    page: page(telemetry, "TelemetryPage"),
  },
  {
    pattern: "/organisations/{clientId}/proxies/{proxyId}/telemetry",
    title: "Telemetry",
    page: page(telemetry, "ProxyTelemetryPage"),
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

  // --- billing ---
  { pattern: "/organisations/{clientId}/billing", title: "Billing", page: page(billing, "BillingPage") },
  // --- end of billing ---
];
