/**
 * The header's switcher for MSP staff (users whose `userMsps` is not empty): between the MSP's own
 * pages and the console of each client it manages. It shows where the page is now; "Switch" goes
 * (no navigation on a mere change of the select).
 */
import { useQueries } from "@tanstack/react-query";
import { useEffect, useId, useState } from "react";
import { api } from "../api/client";
import { must } from "../api/errors";
import { navigate } from "../router";
import { mspKeys, mspPath } from "./msp-common";

/** How many managed clients the switcher lists per MSP (the MSP's page lists them all, paged). */
const LISTED = 100;

const clientConsole = (clientId: string) => `/organisations/${encodeURIComponent(clientId)}/proxies`;

export function MspSwitcher({ mspIds, path }: { mspIds: string[]; path: string }) {
  const selectId = useId();
  const lists = useQueries({
    queries: mspIds.map((mspId) => ({
      queryKey: [...mspKeys.clients(mspId), "switcher"],
      queryFn: async () =>
        must(
          await api.GET("/api/msps/{mspId}/clients", {
            params: { path: { mspId }, query: { page: 1, limit: LISTED } },
          }),
        ),
    })),
  });
  // Where the page is: an MSP's page, or the console of one of the managed clients.
  const here = (() => {
    for (const mspId of mspIds)
      if (path === mspPath(mspId) || path.startsWith(`${mspPath(mspId)}/`)) return mspPath(mspId);
    const clientId = /^\/organisations\/([^/]+)/.exec(path)?.[1];
    if (clientId) {
      const id = decodeURIComponent(clientId);
      const managed = lists.some((list) => list.data?.clients.some((client) => client.clientId === id));
      if (managed) return clientConsole(id);
    }
    return "";
  })();
  const [choice, setChoice] = useState(here);
  useEffect(() => setChoice(here), [here]);
  return (
    <form
      className="inline-form switcher"
      aria-label="Switch between the MSP and its clients"
      onSubmit={(event) => {
        event.preventDefault();
        if (choice) navigate(choice);
      }}
    >
      <label htmlFor={selectId}>Managed service</label>
      <select id={selectId} value={choice} onChange={(event) => setChoice(event.target.value)}>
        {here === "" && <option value="">Choose the MSP or a client…</option>}
        {mspIds.map((mspId, index) => {
          const list = lists[index];
          return (
            <optgroup key={mspId} label={`MSP ${mspId}`}>
              <option value={mspPath(mspId)}>The MSP: its clients, team and usage</option>
              {list?.data?.clients.map((client) => (
                <option key={client.clientId} value={clientConsole(client.clientId)}>
                  Client: {client.clientName}
                </option>
              ))}
            </optgroup>
          );
        })}
      </select>
      <button type="submit" disabled={!choice || choice === here}>
        Switch
      </button>
    </form>
  );
}
