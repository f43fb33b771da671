/** The home page once signed in: the user's organisations (GET /api/clients). */
import { useQuery } from "@tanstack/react-query";
import { api } from "../api/client";
import { errorText, must } from "../api/errors";

export function Home() {
  const clients = useQuery({
    queryKey: ["clients"],
    queryFn: async () => must(await api.GET("/api/clients", { params: { query: { limit: 100 } } })).clients,
  });
  return (
    <section aria-labelledby="home-title">
      <h1 id="home-title">Organisations</h1>
      {clients.isPending && <p>Loading…</p>}
      {clients.isError && <p role="alert">Error: {errorText(clients.error)}</p>}
      {clients.data &&
        (clients.data.length === 0 ? (
          <p>You are not a member of any organisation yet. Ask an administrator for an invite.</p>
        ) : (
          <ul>
            {clients.data.map((client) => (
              <li key={client.clientId}>
                {client.clientName}
                {client.clientStatus === "pendingDeletion" && " (marked for deletion)"}
              </li>
            ))}
          </ul>
        ))}
    </section>
  );
}
