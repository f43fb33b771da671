/**
 * The MSP's pages, under /msps/{mspId}: its managed clients, one client (rename, configuration,
 * top-ups, detach), its team and invites, the usage report, and its billing (the payment method). Each page module loads on first
 * visit (its own chunk); the frame names the MSP and gives its navigation.
 */
import { type ComponentType, lazy, type ReactNode } from "react";
import { Link, matchPath } from "../router";
import { mspPath } from "./msp-common";

export interface MspPageProps {
  mspId: string;
  /** The pattern's parameters (mspId included). */
  params: Record<string, string>;
  user: { userId: string };
}

const page = <M extends { [K in N]: ComponentType<MspPageProps> }, N extends keyof M & string>(
  load: () => Promise<M>,
  name: N,
): ComponentType<MspPageProps> =>
  lazy(async (): Promise<{ default: ComponentType<MspPageProps> }> => ({ default: (await load())[name] }));

const clients = () => import("./msp");
const client = () => import("./msp-client");
const team = () => import("./msp-team");
const usage = () => import("./msp-usage");
const billing = () => import("./msp-billing");

/** The MSP's sections, in the order of its navigation. */
const SECTIONS = [
  { segment: "", name: "Managed clients" },
  { segment: "team", name: "Team" },
  { segment: "usage", name: "Usage" },
  { segment: "billing", name: "Billing" },
] as const;

const MSP_ROUTES = [
  { pattern: "/msps/{mspId}", title: "Managed clients", page: page(clients, "MspClientsPage") },
  {
    pattern: "/msps/{mspId}/clients/{clientId}",
    title: "Managed client",
    page: page(client, "MspClientPage"),
  },
  { pattern: "/msps/{mspId}/team", title: "MSP team", page: page(team, "MspTeamPage") },
  { pattern: "/msps/{mspId}/usage", title: "Usage report", page: page(usage, "MspUsagePage") },
  { pattern: "/msps/{mspId}/billing", title: "MSP billing", page: page(billing, "MspBillingPage") },
];

/** The MSP page a path names: its title, parameters and component, or null. */
export function matchMspRoute(path: string) {
  for (const route of MSP_ROUTES) {
    const params = matchPath(route.pattern, path);
    if (params?.mspId) return { title: route.title, params, mspId: params.mspId, Page: route.page };
  }
  return null;
}

export function MspFrame({ mspId, path, children }: { mspId: string; path: string; children: ReactNode }) {
  const rest = path.slice(mspPath(mspId).length).split("/")[1] ?? "";
  const current = rest === "clients" ? "" : rest;
  return (
    <>
      <p className="context">
        Managed service provider <code>{mspId}</code>
      </p>
      <nav aria-label="MSP">
        <ul className="inline">
          {SECTIONS.map((section) => (
            <li key={section.segment}>
              <Link
                href={section.segment ? mspPath(mspId, section.segment) : mspPath(mspId)}
                aria-current={current === section.segment ? "page" : undefined}
              >
                {section.name}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      {children}
    </>
  );
}
