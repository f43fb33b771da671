/**
 * The "Delete" section of a credential's or a target's page: the button, then a dialog that names
 * the proxies deleted with it (every proxy of the organisation, read when the dialog opens), and
 * the deletion. The API deletes the dependants; this only says which before it happens.
 */
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { type ReactNode, useState } from "react";
import { errorText } from "../api/errors";
import { ConfirmDialog, FormError } from "../ui";
import { type ProxyLink, proxiesKey, useAllProxies } from "./credentials-common";

export function DeleteWithProxies({
  clientId,
  kind,
  name,
  intro,
  consequence,
  uses,
  verb,
  remove,
  onDeleted,
}: {
  clientId: string;
  /** What is deleted: "credential", "target" (the heading and the buttons say "Delete <kind>"). */
  kind: string;
  name: string;
  /** What deleting it takes with it, under the heading. */
  intro: ReactNode;
  /** The dialog's first line. */
  consequence: ReactNode;
  /** Whether a proxy depends on it (deleted with it). */
  uses: (proxy: ProxyLink) => boolean;
  /** How a proxy depends on it: "uses" or "forwards to" ("This proxy uses it and is deleted…"). */
  verb: { one: string; many: string };
  remove: () => Promise<unknown>;
  /** After the deletion: the caches the page had, and where to go. */
  onDeleted: () => Promise<void> | void;
}) {
  const queryClient = useQueryClient();
  const [confirming, setConfirming] = useState(false);
  const proxies = useAllProxies(clientId, confirming);
  const linked = (proxies.data ?? []).filter(uses);
  const deletion = useMutation({
    mutationFn: remove,
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: proxiesKey(clientId) });
      await onDeleted();
    },
  });
  const label = `Delete ${kind}`;
  return (
    <section aria-labelledby="delete-title">
      <h2 id="delete-title">{label}</h2>
      <p>{intro}</p>
      <button
        type="button"
        className="danger"
        onClick={() => setConfirming(true)}
        disabled={deletion.isPending}
      >
        {label}
      </button>
      <FormError error={deletion.error} />
      <ConfirmDialog
        open={confirming}
        title={`Delete ${name}?`}
        confirmLabel={label}
        onCancel={() => setConfirming(false)}
        onConfirm={() => {
          deletion.mutate();
          setConfirming(false);
        }}
      >
        <p>{consequence}</p>
        {proxies.isPending && <p>Looking for the proxies that use it…</p>}
        {proxies.isError && <p role="alert">Error: {errorText(proxies.error)}</p>}
        {proxies.data &&
          (linked.length === 0 ? (
            <p>No proxy uses it.</p>
          ) : (
            <>
              <p>
                {linked.length === 1
                  ? `This proxy ${verb.one} it and is`
                  : `These ${linked.length} proxies ${verb.many} it and are`}{" "}
                deleted with it:
              </p>
              <ul aria-label="Proxies deleted with it">
                {linked.map((proxy) => (
                  <li key={proxy.proxyId}>
                    {proxy.proxyName} ({proxy.proxyRegion})
                  </li>
                ))}
              </ul>
            </>
          ))}
      </ConfirmDialog>
    </section>
  );
}
