/**
 * Notifications (spec 2.13, 4.12): the user's inbox, the platform's system notifications and each
 * organisation's inbox. Lists mark nothing read; opening one (GET of the notification) marks it
 * read, as the API does. "Unread" is written out, never shown by colour alone.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useId, useState } from "react";
import { api } from "../api/client";
import { errorText, must } from "../api/errors";
import { orgPath } from "../org-frame";
import { Link } from "../router";

interface Notification {
  notificationId: string;
  type: string;
  title: string;
  message: string;
  read: boolean;
  createdAt: string;
  /** Details by type: a usage digest (a meter alert) names its proxyId and meterId. */
  data?: Record<string, unknown>;
}

type Inbox = { kind: "user"; userId: string } | { kind: "system" } | { kind: "client"; clientId: string };

const inboxKey = (inbox: Inbox) => ["notifications", inbox] as const;

async function listInbox(inbox: Inbox): Promise<Notification[]> {
  const query = { limit: 50 };
  if (inbox.kind === "user")
    return must(
      await api.GET("/api/users/{userId}/notifications", {
        params: { path: { userId: inbox.userId }, query },
      }),
    ).notifications;
  if (inbox.kind === "system")
    return must(await api.GET("/api/notifications/system", { params: { query } })).notifications;
  return must(
    await api.GET("/api/clients/{clientId}/notifications", {
      params: { path: { clientId: inbox.clientId }, query },
    }),
  ).notifications;
}

async function openNotification(inbox: Inbox, notificationId: string): Promise<Notification | undefined> {
  if (inbox.kind === "user")
    return must(
      await api.GET("/api/users/{userId}/notifications/{notificationId}", {
        params: { path: { userId: inbox.userId, notificationId } },
      }),
    ).notifications[0];
  if (inbox.kind === "system")
    return must(
      await api.GET("/api/notifications/system/{notificationId}", { params: { path: { notificationId } } }),
    ).notifications[0];
  return must(
    await api.GET("/api/clients/{clientId}/notifications/{notificationId}", {
      params: { path: { clientId: inbox.clientId, notificationId } },
    }),
  ).notifications[0];
}

/** The unread count of the user's and the system inbox (their first page), for the header. */
export function useUnreadCount(userId: string | undefined): number | undefined {
  const user = useQuery({
    queryKey: inboxKey({ kind: "user", userId: userId ?? "" }),
    queryFn: () => listInbox({ kind: "user", userId: userId ?? "" }),
    enabled: Boolean(userId),
  });
  const system = useQuery({
    queryKey: inboxKey({ kind: "system" }),
    queryFn: () => listInbox({ kind: "system" }),
    enabled: Boolean(userId),
  });
  if (!user.data || !system.data) return undefined;
  return [...user.data, ...system.data].filter((notification) => !notification.read).length;
}

function InboxSection({ title, inbox }: { title: string; inbox: Inbox }) {
  const queryClient = useQueryClient();
  const headingId = useId();
  const list = useQuery({ queryKey: inboxKey(inbox), queryFn: () => listInbox(inbox) });
  const [opened, setOpened] = useState<Notification | undefined>();
  const open = useMutation({
    mutationFn: (notificationId: string) => openNotification(inbox, notificationId),
    onSuccess: (notification) => {
      setOpened(notification);
      void queryClient.invalidateQueries({ queryKey: ["notifications"] });
    },
  });
  const unread = list.data?.filter((notification) => !notification.read).length ?? 0;
  return (
    <section aria-labelledby={headingId}>
      <h2 id={headingId}>
        {title} ({unread} unread)
      </h2>
      {list.isPending && <p>Loading…</p>}
      {list.isError && <p role="alert">Error: {errorText(list.error)}</p>}
      {list.data?.length === 0 && <p>Nothing here yet.</p>}
      <ul>
        {list.data?.map((notification) => (
          <li key={notification.notificationId}>
            <button type="button" className="link" onClick={() => open.mutate(notification.notificationId)}>
              {notification.title}
            </button>{" "}
            <span>
              {notification.read ? "Read" : "Unread"}, {new Date(notification.createdAt).toLocaleString()}
            </span>
            <MeterLink inbox={inbox} notification={notification} />
            {opened?.notificationId === notification.notificationId && (
              <section aria-label={`Notification: ${notification.title}`}>
                <p>{opened.message}</p>
              </section>
            )}
          </li>
        ))}
      </ul>
      {open.isError && <p role="alert">Error: {errorText(open.error)}</p>}
    </section>
  );
}

export function Notifications({ user }: { user: { userId: string } }) {
  const clients = useQuery({
    queryKey: ["clients"],
    queryFn: async () => must(await api.GET("/api/clients", { params: { query: { limit: 100 } } })).clients,
  });
  const unread = useUnreadCount(user.userId);
  return (
    <>
      <h1>Notifications</h1>
      {unread !== undefined && <p>{unread === 0 ? "No unread notifications." : `${unread} unread.`}</p>}
      <InboxSection title="Yours" inbox={{ kind: "user", userId: user.userId }} />
      <InboxSection title="System" inbox={{ kind: "system" }} />
      {clients.data?.map((client) => (
        <InboxSection
          key={client.clientId}
          title={`Organisation ${client.clientName}`}
          inbox={{ kind: "client", clientId: client.clientId }}
        />
      ))}
    </>
  );
}

/** One organisation's inbox (its navigation's "Notifications"). */
export function OrganisationNotifications({ clientId }: { clientId: string }) {
  return (
    <>
      <h1>Notifications</h1>
      <InboxSection title="This organisation's notifications" inbox={{ kind: "client", clientId }} />
    </>
  );
}

/** A meter alert digest (type usage) links to its proxy's meters (issue 23). */
function MeterLink({ inbox, notification }: { inbox: Inbox; notification: Notification }) {
  const proxyId = notification.data?.proxyId;
  const meterId = notification.data?.meterId;
  if (notification.type !== "usage" || inbox.kind !== "client" || typeof proxyId !== "string") return null;
  return (
    <>
      {" "}
      <Link
        href={`${orgPath(inbox.clientId, "proxies", proxyId, "meters")}${typeof meterId === "string" ? `#meter-${encodeURIComponent(meterId)}` : ""}`}
      >
        Open the meter of “{notification.title}”
      </Link>
    </>
  );
}
