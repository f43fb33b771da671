/**
 * Public webhooks (spec 6.2): the OAuth2 provider's redirect back to `{base_url}/webhooks/oauth2`.
 * No user token comes with it (and no rate limit per token applies); the single-use, expiring
 * `state` is what authenticates it (lib/domain/oauth2-flow.ts).
 */
import { z } from "zod";
import { access, operation, wrapped } from "#lib/api/operation.ts";
import { toApiCredential } from "#lib/domain/credentials.ts";
import { completeAuthorization } from "#lib/domain/oauth2-flow.ts";
import { CredentialSchema } from "./credentials.ts";

/** What the provider sends back (RFC 6749 4.1.2); other parameters it adds are ignored. */
const CallbackQuery = z.object({
  state: z.string().optional(),
  code: z.string().optional(),
  error: z.string().optional(),
  error_description: z.string().optional(),
});

export const webhookOperations = [
  operation({
    id: "completeOAuth2Authorization",
    method: "GET",
    path: "/webhooks/oauth2",
    group: "webhooks",
    summary: "Complete an OAuth2 authorization (provider redirect)",
    description:
      "Where the OAuth2 provider redirects the browser after consent for an authorization_code or PKCE credential. Public: the single-use `state` (valid 15 minutes) identifies the credential. The `code` is exchanged at the credential's token endpoint, the tokens are encrypted into its secret and the credential becomes permanent. An unknown, used or expired state, or an `error` from the provider, is a 400; a refused code exchange a 502 with the provider's reason; the credential then stays temporary.",
    access: access.public,
    effect: "write",
    query: CallbackQuery,
    response: { status: 200, schema: wrapped("credentials", CredentialSchema) },
    errors: [502],
    handler: async ({ query }) => ({
      body: {
        message: "Authorization complete: the credential is ready to use",
        credentials: [toApiCredential(await completeAuthorization(query))],
      },
    }),
  }),
];
