/**
 * A real OAuth 2.0 / OpenID Connect authorization server for tests: oidc-provider on 127.0.0.1,
 * with its development login and consent pages, client_credentials enabled, and a record of every
 * token and code it issues (so tests can check that none of them leaks). `Browser` drives the
 * authorization endpoint over HTTP as a user's browser would (cookie jar, redirects, form posts).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
// @ts-expect-error oidc-provider ships no type declarations
import Provider from "oidc-provider";

/** Client metadata as oidc-provider takes it (snake_case, RFC 7591). */
export interface OAuthClientMetadata {
  client_id: string;
  client_secret?: string;
  grant_types: string[];
  response_types: string[];
  redirect_uris: string[];
  token_endpoint_auth_method: "client_secret_basic" | "client_secret_post" | "none";
  scope?: string;
}

/** A confidential client of the client_credentials grant (a service, no user, no redirect). */
export const serviceClient = (
  clientId: string,
  clientSecret: string,
  scope: string,
): OAuthClientMetadata => ({
  client_id: clientId,
  client_secret: clientSecret,
  grant_types: ["client_credentials"],
  response_types: [],
  redirect_uris: [],
  token_endpoint_auth_method: "client_secret_basic",
  scope,
});

export interface OAuthServerOptions {
  clients: OAuthClientMetadata[];
  scopes?: string[];
  /**
   * Whether a client must use PKCE. Default: oidc-provider's own rule (public clients, i.e.
   * token_endpoint_auth_method `none`, must; confidential ones may).
   */
  pkceRequired?: (client: { clientId: string; clientAuthMethod: string }) => boolean;
  /** Token lifetimes in seconds, merged over the defaults below. */
  ttl?: Record<string, number>;
}

export interface OAuthServer {
  issuer: string;
  tokenUrl: string;
  authorizationUrl: string;
  /** Every access token, refresh token and authorization code issued so far. */
  issued: Set<string>;
  close(): Promise<void>;
}

const DEFAULT_TTL = {
  AccessToken: 3600,
  AuthorizationCode: 60,
  ClientCredentials: 600,
  Grant: 3600,
  IdToken: 3600,
  Interaction: 600,
  RefreshToken: 86_400,
  Session: 3600,
};

export async function startOAuthServer(options: OAuthServerOptions): Promise<OAuthServer> {
  let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end();
  const server: Server = createServer((req, res) => handler(req, res));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const provider = new Provider(issuer, {
    clients: options.clients,
    scopes: options.scopes ?? ["openid", "offline_access", "api:read", "api:write"],
    features: { clientCredentials: { enabled: true }, devInteractions: { enabled: true } },
    ...(options.pkceRequired
      ? {
          pkce: {
            required: (_ctx: unknown, client: { clientId: string; clientAuthMethod: string }) =>
              options.pkceRequired!(client),
          },
        }
      : {}),
    findAccount: async (_ctx: unknown, id: string) => ({ accountId: id, claims: async () => ({ sub: id }) }),
    cookies: { keys: ["oauth2-test-cookie-key"] },
    ttl: { ...DEFAULT_TTL, ...options.ttl },
  });
  // Opaque tokens and codes: the model's jti is the value handed out.
  const issued = new Set<string>();
  for (const kind of ["access_token", "client_credentials", "refresh_token", "authorization_code"]) {
    provider.on(`${kind}.saved`, (model: { jti?: string }) => {
      if (model.jti) issued.add(model.jti);
    });
  }
  handler = provider.callback();
  const discovery = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as {
    token_endpoint: string;
    authorization_endpoint: string;
  };
  return {
    issuer,
    tokenUrl: discovery.token_endpoint,
    authorizationUrl: discovery.authorization_endpoint,
    issued,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface AuthorizeOptions {
  /** The account to sign in as on the dev login page. */
  login?: string;
  /** Press the pages' "Cancel" link: the provider redirects back with error=access_denied. */
  abort?: boolean;
  /** Stop at a redirect to this URL; default: at the first redirect that leaves the provider. */
  redirectUri?: string;
}

/** The user's browser: follows the provider's redirects, signs in and consents on its dev pages. */
export class Browser {
  private readonly cookies = new Map<string, string>();

  private remember(response: Response) {
    for (const line of response.headers.getSetCookie()) {
      const [pair = "", ...attributes] = line.split(";");
      const eq = pair.indexOf("=");
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const expired = attributes.some((a) => /expires=.*1970/i.test(a)) || value === "";
      if (expired) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  private async send(url: string, init: RequestInit = {}): Promise<Response> {
    const cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join("; ");
    const response = await fetch(url, {
      ...init,
      redirect: "manual",
      headers: { ...(init.headers as Record<string, string>), ...(cookie ? { cookie } : {}) },
    });
    this.remember(response);
    return response;
  }

  /**
   * Runs the flow from the authorization URL to the provider's redirect back to the client, and
   * returns that redirect's URL without following it.
   */
  async authorize(url: string, options: AuthorizeOptions = {}): Promise<URL> {
    const providerOrigin = new URL(url).origin;
    const isClientRedirect = (target: URL) =>
      options.redirectUri ? target.href.startsWith(options.redirectUri) : target.origin !== providerOrigin;
    let next = url;
    let response = await this.send(next);
    for (let step = 0; step < 20; step++) {
      const location = response.headers.get("location");
      if (location) {
        await response.arrayBuffer();
        const target = new URL(location, next);
        if (isClientRedirect(target)) return target;
        next = target.href;
        response = await this.send(next);
        continue;
      }
      const html = await response.text();
      if (response.status !== 200)
        throw new Error(`authorization page answered ${response.status}: ${html.slice(0, 500)}`);
      if (options.abort) {
        const abortPath = /href="([^"]*\/abort)"/.exec(html)?.[1];
        if (!abortPath) throw new Error(`no Cancel link on the page: ${html.slice(0, 500)}`);
        next = new URL(abortPath, next).href;
        response = await this.send(next);
        continue;
      }
      const prompt = /name="prompt" value="(\w+)"/.exec(html)?.[1];
      const form = new URLSearchParams({ prompt: prompt ?? "" });
      if (prompt === "login") {
        form.set("login", options.login ?? "alice");
        form.set("password", "any");
      }
      response = await this.send(next, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: form.toString(),
      });
    }
    throw new Error("authorization flow did not finish");
  }
}
