/** The home page once signed in: the user's organisations (GET /api/clients) and a new one. */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api } from "../api/client";
import { errorText, must } from "../api/errors";
import { Link, navigate } from "../router";
import { Field, FormError, fieldError } from "../ui";

export const CLIENTS_KEY = ["clients"] as const;

export function Home() {
  const queryClient = useQueryClient();
  const clients = useQuery({
    queryKey: CLIENTS_KEY,
    queryFn: async () => must(await api.GET("/api/clients", { params: { query: { limit: 100 } } })).clients,
  });
  const [creating, setCreating] = useState(false);
  const create = useMutation({
    mutationFn: async (clientName: string) =>
      must(await api.POST("/api/clients", { body: { clientName } })).clients[0],
    onSuccess: async (client) => {
      await queryClient.invalidateQueries({ queryKey: CLIENTS_KEY });
      if (client) navigate(`/organisations/${encodeURIComponent(client.clientId)}`);
    },
  });
  return (
    <section aria-labelledby="home-title">
      <h1 id="home-title">Organisations</h1>
      {clients.isPending && <p>Loading…</p>}
      {clients.isError && <p role="alert">Error: {errorText(clients.error)}</p>}
      {clients.data &&
        (clients.data.length === 0 ? (
          <p>
            You are not a member of any organisation yet. Create one with “New organisation” below, or ask an
            organisation's administrator to invite your address.
          </p>
        ) : (
          <ul aria-label="Your organisations">
            {clients.data.map((client) => (
              <li key={client.clientId}>
                <Link href={`/organisations/${encodeURIComponent(client.clientId)}`}>
                  {client.clientName}
                </Link>
                {client.clientStatus === "pendingDeletion" && " (marked for deletion)"}
              </li>
            ))}
          </ul>
        ))}
      <button type="button" aria-expanded={creating} onClick={() => setCreating(!creating)}>
        New organisation
      </button>
      {creating && (
        <form
          noValidate
          aria-label="New organisation"
          className="panel"
          onSubmit={(event) => {
            event.preventDefault();
            create.mutate(String(new FormData(event.currentTarget).get("clientName") ?? ""));
          }}
        >
          <Field
            // The form opens at the user's request (the button above): its field takes the focus.
            autoFocus
            label="Organisation name"
            name="clientName"
            required
            error={fieldError(create.error, "clientName")}
            hint="You become its owner and administrator; you can rename it later."
          />
          <FormError error={create.error} fields={["clientName"]} />
          <button type="submit" disabled={create.isPending}>
            Create
          </button>
        </form>
      )}
    </section>
  );
}
