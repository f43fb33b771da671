/**
 * The frame of an organisation's pages: the organisation's name (a link to its overview) and its
 * navigation. Every page under /organisations/{clientId} renders inside it; the link of the section
 * the page belongs to is marked current.
 */
import { useQuery } from "@tanstack/react-query";
import type { ReactNode } from "react";
import { api } from "./api/client";
import { must } from "./api/errors";
import { Link } from "./router";

/** The organisation's sections, in the order of its navigation (their names are the links' names). */
export const ORG_SECTIONS = [
  { segment: "proxies", name: "Proxies" },
  { segment: "targets", name: "Targets" },
  { segment: "credentials", name: "Credentials" },
  { segment: "request-logs", name: "Request logs" },
  { segment: "telemetry", name: "Telemetry" },
  { segment: "members", name: "Members" },
  { segment: "notifications", name: "Notifications" },
  { segment: "billing", name: "Billing" },
] as const;

export type OrgSection = (typeof ORG_SECTIONS)[number]["segment"];

/** The path of an organisation's page: orgPath("c1", "proxies", "p1") is /organisations/c1/proxies/p1. */
export const orgPath = (clientId: string, ...segments: string[]) =>
  `/organisations/${[clientId, ...segments].map(encodeURIComponent).join("/")}`;

export const clientKey = (clientId: string) => ["client", clientId] as const;

/** The organisation (GET /api/clients/{clientId}), shared by every page of the frame. */
export function useClient(clientId: string) {
  return useQuery({
    queryKey: clientKey(clientId),
    queryFn: async () =>
      must(await api.GET("/api/clients/{clientId}", { params: { path: { clientId } } })).clients[0],
  });
}

/** The section a path belongs to ("members" for the overview, whose main content is the members). */
export function sectionOf(clientId: string, path: string): OrgSection | undefined {
  const rest = path.slice(orgPath(clientId).length).split("/")[1] ?? "";
  if (rest === "") return "members";
  return ORG_SECTIONS.find((section) => section.segment === rest)?.segment;
}

export function OrgFrame({
  clientId,
  path,
  children,
}: {
  clientId: string;
  path: string;
  children: ReactNode;
}) {
  const client = useClient(clientId);
  const current = sectionOf(clientId, path);
  return (
    <>
      {path.replace(/\/$/, "") !== orgPath(clientId) && (
        <p className="context">
          Organisation: <Link href={orgPath(clientId)}>{client.data?.clientName ?? clientId}</Link>
        </p>
      )}
      <nav aria-label="Organisation">
        <ul className="inline">
          {ORG_SECTIONS.map((section) => (
            <li key={section.segment}>
              <Link
                href={section.segment === "members" ? orgPath(clientId) : orgPath(clientId, section.segment)}
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
