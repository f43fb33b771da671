/**
 * The Credentials pages (issue 23) in the shared Chromium against the real local stack: the empty
 * state; an API-key proxy credential and a basic-auth target credential created through the form
 * (the secrets never appear again, on any page or in the list); "Send a test request" to a loopback
 * echo server, with the credential applied and its secret redacted in the answer shown; the token
 * test of a customToken credential; the metadata edit; the deletion dialog naming the proxy that
 * goes with the credential; and an OAuth2 authorization-code credential whose consent, at a real
 * loopback provider (oidc-provider), lands back on the credential's page, authorized.
 *
 * The forms come from the API's request schemas (SchemaFields): a field is set by its label
 * whichever control the schema gives it (a select for an enum, a text field otherwise), and the
 * secret is typed as JSON while the schema leaves it free, or field by field once it has a shape.
 */
import type { Server } from "node:http";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resetConfig } from "#lib/config.ts";
import { closeOutboundAgents } from "#lib/net/outbound.ts";
import { listenTokenEndpoint, listenWithBody } from "../support/loopback.ts";
import { type OAuthServer, startOAuthServer } from "../support/oauth-server.ts";
import { joinClient, type TestStack, type TestUser } from "../support/stack.ts";
import {
  checkPage,
  connectBrowser,
  describePageOnFailure,
  newOrganisation,
  signedInConsole,
  startConsoleStack,
} from "./support.ts";

const US = "us-east-1";
const suffix = Math.random().toString(36).slice(2, 8);
const API_KEY = `key-${suffix}-SECRET-VALUE`;
const PASSWORD = `pw-${suffix}-SECRET-VALUE`;
const OAUTH_CLIENT = "console-web";
const OAUTH_SECRET = `oauth-${suffix}-SECRET-VALUE`;
const SECRETS = [API_KEY, PASSWORD, OAUTH_SECRET, Buffer.from(`alice:${PASSWORD}`).toString("base64")];

let browser: Browser;
let stack: TestStack;
let origin: string;
let context: BrowserContext;
let page: Page;
describePageOnFailure(() => page);
let user: TestUser;
let clientId: string;
let oauth: OAuthServer;
let echoBase: string;
let tokenBase: string;
const servers: Server[] = [];
const issuedTokens = new Set<string>();
/** Requests the echo server received. */
const received: Array<{ url: string; headers: Record<string, unknown> }> = [];

const heading = (name: string | RegExp) => page.getByRole("heading", { level: 1, name });
const shown = (locator: Locator) => expect.poll(() => locator.count()).toBeGreaterThan(0);
const exactly = (label: string) => new RegExp(`^${label}( \\(optional\\))?$`, "i");

/** Sets a field by its label, whichever control the schema gave it. */
async function setField(scope: Page | Locator, label: string, value: string): Promise<void> {
  const field = scope.getByLabel(exactly(label));
  if ((await field.evaluate((element) => element.tagName)) === "SELECT") await field.selectOption(value);
  else await field.fill(value);
}

/** The secret: one JSON text while the schema leaves it free, its own fields once it has a shape. */
async function fillSecret(secret: Record<string, string>, labels: Record<string, string>): Promise<void> {
  const json = page.getByLabel(exactly("Secret"));
  if ((await json.count()) === 1 && (await json.evaluate((element) => element.tagName)) === "TEXTAREA") {
    await json.fill(JSON.stringify(secret));
    return;
  }
  for (const [name, value] of Object.entries(secret)) await setField(page, labels[name] ?? name, value);
}

async function expectNoSecretOnPage(): Promise<void> {
  const html = await page.content();
  for (const secret of SECRETS) expect(html).not.toContain(secret);
}

async function createThroughForm(fields: {
  name: string;
  type: "proxy" | "target";
  authType: string;
  secret: Record<string, string>;
  labels: Record<string, string>;
}): Promise<string> {
  await page.goto(`/organisations/${clientId}/credentials/new`);
  await expect.poll(() => heading("New credential").count()).toBe(1);
  await setField(page, "Name", fields.name);
  await setField(page, "Credential type", fields.type);
  await setField(page, "Auth type", fields.authType);
  await setField(page, "Region", US);
  await fillSecret(fields.secret, fields.labels);
  await page.getByRole("button", { name: "Create credential" }).click();
  await expect.poll(() => heading(fields.name).count()).toBe(1);
  return decodeURIComponent(new URL(page.url()).pathname.split("/").at(-1) ?? "");
}

beforeAll(async () => {
  // The console's own origin is the stack's APP_URL here, as in a deployment: the OAuth2 callback
  // sends the browser back to it.
  delete process.env.APP_URL;
  resetConfig();
  ({ stack, origin } = await startConsoleStack());
  echoBase = await listenWithBody((req, _body, res) => {
    received.push({ url: req.url ?? "", headers: req.headers });
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ ok: true, path: req.url, authorization: req.headers.authorization ?? null }));
  }, servers);
  tokenBase = await listenTokenEndpoint(servers, issuedTokens, "console-token");
  oauth = await startOAuthServer({
    clients: [
      {
        client_id: OAUTH_CLIENT,
        client_secret: OAUTH_SECRET,
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        redirect_uris: [`${origin}/webhooks/oauth2`],
        token_endpoint_auth_method: "client_secret_basic",
      },
    ],
  });
  browser = await connectBrowser();
  ({ context, page, user } = await signedInConsole(browser, stack, origin));
  clientId = await newOrganisation(user);
});
afterAll(async () => {
  await context?.close();
  await browser?.close();
  await oauth?.close();
  for (const server of servers) server.close();
  await closeOutboundAgents();
  await stack?.stop();
});

describe("credentials in the console", () => {
  let proxyCredentialId: string;
  let targetCredentialId: string;
  let targetId: string;

  it("shows the empty state, which links to the creation", async () => {
    await page.goto(`/organisations/${clientId}/credentials`);
    await expect.poll(() => heading("Credentials").count()).toBe(1);
    await shown(page.getByText(/no credentials yet/i));
    expect(
      await page
        .getByRole("navigation", { name: "Organisation" })
        .getByRole("link", { name: "Credentials" })
        .getAttribute("aria-current"),
    ).toBe("page");
    await checkPage(page, "credentials-empty");
    await page.getByRole("link", { name: "Create a credential" }).click();
    await expect.poll(() => heading("New credential").count()).toBe(1);
    await shown(page.getByText(/never shown again/i));
    // Nothing filled: the schema's required fields are named, next to each.
    await page.getByRole("button", { name: "Create credential" }).click();
    await expect.poll(() => page.getByLabel(exactly("Name")).getAttribute("aria-invalid")).toBe("true");
    expect(page.url()).toContain("/credentials/new");
    await checkPage(page, "credential-new-errors");
  });

  it("creates an API-key proxy credential: the key is never shown again", async () => {
    proxyCredentialId = await createThroughForm({
      name: `Callers ${suffix}`,
      type: "proxy",
      authType: "apiKey",
      secret: { keyName: "x-api-key", keyValue: API_KEY },
      labels: { keyName: "Key name", keyValue: "Key value" },
    });
    const stored = await user.api.get(`/api/clients/${clientId}/credentials/${proxyCredentialId}`);
    expect(stored.body.credentials[0]).toMatchObject({
      credentialType: "proxy",
      credentialAuthType: "apiKey",
    });
    await shown(page.getByText("Stored encrypted; never shown."));
    await expectNoSecretOnPage();
    await checkPage(page, "credential-api-key");
  });

  it("creates a basic-auth target credential; the list shows both, without a secret", async () => {
    targetCredentialId = await createThroughForm({
      name: `Upstream ${suffix}`,
      type: "target",
      authType: "basicAuth",
      secret: { username: "alice", password: PASSWORD },
      labels: { username: "Username", password: "Password" },
    });
    await expectNoSecretOnPage();
    await page.getByRole("link", { name: "All credentials" }).click();
    await expect.poll(() => heading("Credentials").count()).toBe(1);
    const table = page.getByRole("table", { name: /credentials/i });
    await shown(table.getByRole("link", { name: `Callers ${suffix}` }));
    await shown(table.getByRole("link", { name: `Upstream ${suffix}` }));
    await expectNoSecretOnPage();
    await checkPage(page, "credentials-list");
  });

  it("sends a test request with the credential applied, and shows the answer with the secret redacted", async () => {
    const target = await user.api.post(`/api/clients/${clientId}/targets`, {
      targetName: `Echo ${suffix}`,
      targetRegion: US,
      targetBaseURL: echoBase,
      targetTestPath: "/health",
    });
    expect(target.status, JSON.stringify(target.body)).toBe(201);
    targetId = target.body.targets[0].targetId;

    await page.goto(`/organisations/${clientId}/credentials/${targetCredentialId}`);
    await expect.poll(() => heading(`Upstream ${suffix}`).count()).toBe(1);
    const form = page.getByRole("form", { name: "Send a test request" });
    await form.getByLabel(exactly("Target")).selectOption(targetId);
    await form.getByRole("button", { name: "Send test request" }).click();
    await shown(page.getByRole("status").filter({ hasText: /answered 200 in \d+ ms/ }));
    const seen = received.at(-1);
    expect(seen?.url).toBe("/health");
    expect(seen?.headers.authorization).toBe(`Basic ${Buffer.from(`alice:${PASSWORD}`).toString("base64")}`);
    await shown(page.getByText(/\[redacted\]/));
    await expectNoSecretOnPage();
    await checkPage(page, "credential-test-result");
  });

  it("fetches a customToken credential's token without showing it", async () => {
    const created = await user.api.post(`/api/clients/${clientId}/credentials`, {
      credentialName: `Token ${suffix}`,
      credentialType: "target",
      authType: "customToken",
      region: US,
      secret: {
        tokenUrl: `${tokenBase}/token`,
        method: "POST",
        tokenPath: "data.token",
        expiryMethod: "expires_in",
        expiryPath: "data.expires_in",
        keyName: "Authorization",
        placement: "header",
        prefix: "Bearer",
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    await page.goto(`/organisations/${clientId}/credentials/${created.body.credentials[0].credentialId}`);
    await page.getByRole("button", { name: "Fetch a token" }).click();
    await shown(page.getByRole("status").filter({ hasText: /a token came \(\d+ characters\), expiring/i }));
    expect(issuedTokens.size).toBe(1);
    const html = await page.content();
    for (const token of issuedTokens) expect(html).not.toContain(token);
    await checkPage(page, "credential-token-test");
  });

  it("edits the metadata", async () => {
    await page.goto(`/organisations/${clientId}/credentials/${proxyCredentialId}`);
    const form = page.getByRole("form", { name: "Edit" });
    await form.getByLabel(exactly("Name")).fill(`Callers renamed ${suffix}`);
    await form.getByLabel(exactly("Notes")).fill("Used by the mobile app");
    await form.getByRole("button", { name: "Save" }).click();
    await shown(page.getByText("Credential saved."));
    await expect.poll(() => heading(`Callers renamed ${suffix}`).count()).toBe(1);
    const stored = await user.api.get(`/api/clients/${clientId}/credentials/${proxyCredentialId}`);
    expect(stored.body.credentials[0]).toMatchObject({
      credentialName: `Callers renamed ${suffix}`,
      notes: "Used by the mobile app",
    });
    // A name the schema refuses (empty) is named next to the field and not sent.
    await form.getByLabel(exactly("Name")).fill("");
    await form.getByRole("button", { name: "Save" }).click();
    await expect.poll(() => form.getByLabel(exactly("Name")).getAttribute("aria-invalid")).toBe("true");
    await checkPage(page, "credential-edit-error");
  });

  it("deletes it after a dialog that names the proxy going with it", async () => {
    const proxy = await user.api.post(`/api/clients/${clientId}/proxies`, {
      proxyName: `Mobile proxy ${suffix}`,
      proxyRegion: US,
      proxyProxyCredentialId: proxyCredentialId,
      proxyTargetId: targetId,
      proxyTargetCredentialId: targetCredentialId,
    });
    expect(proxy.status, JSON.stringify(proxy.body)).toBe(201);
    const proxyId = proxy.body.proxies[0].proxyId;
    await page.goto(`/organisations/${clientId}/credentials/${proxyCredentialId}`);
    await page.getByRole("button", { name: "Delete credential" }).click();
    const dialog = page.getByRole("dialog", { name: `Delete Callers renamed ${suffix}?` });
    await shown(
      dialog
        .getByRole("list", { name: "Proxies deleted with it" })
        .getByText(`Mobile proxy ${suffix} (${US})`),
    );
    await checkPage(page, "credential-delete-dialog");
    await dialog.getByRole("button", { name: "Delete credential" }).click();
    await expect.poll(() => heading("Credentials").count()).toBe(1);
    expect((await user.api.get(`/api/clients/${clientId}/credentials/${proxyCredentialId}`)).status).toBe(
      404,
    );
    expect((await user.api.get(`/api/clients/${clientId}/proxies/${proxyId}`)).status).toBe(404);
  });

  it("a reader sees the credentials, without the controls their role would be refused", async () => {
    const reader = await signedInConsole(browser, stack, origin);
    try {
      await joinClient(user, clientId, reader.user, "reader");
      const readerPage = reader.page;
      await readerPage.goto(`/organisations/${clientId}/credentials`);
      const table = readerPage.getByRole("table", { name: /credentials/i });
      await shown(table.getByRole("link", { name: `Upstream ${suffix}` }));
      expect(await readerPage.getByRole("link", { name: "New credential" }).count()).toBe(0);
      await table.getByRole("link", { name: `Upstream ${suffix}` }).click();
      await expect
        .poll(() => readerPage.getByRole("heading", { level: 1, name: `Upstream ${suffix}` }).count())
        .toBe(1);
      await expect.poll(() => readerPage.getByText("Stored encrypted; never shown.").count()).toBe(1);
      for (const name of ["Send a test request", "Edit", "Delete credential"])
        await expect.poll(() => readerPage.getByRole("heading", { name }).count()).toBe(0);
      // The rules are listed; creating one is for the devops role and above.
      await expect.poll(() => readerPage.getByRole("heading", { level: 2, name: "Rules" }).count()).toBe(1);
      expect(await readerPage.getByRole("form", { name: "New rule" }).count()).toBe(0);
      await checkPage(readerPage, "credential-reader");
      await readerPage.goto(`/organisations/${clientId}/credentials/new`);
      await expect.poll(() => readerPage.getByText(/needs the devops role or above/i).count()).toBe(1);
    } finally {
      await reader.context.close();
    }
  });

  it("an OAuth2 credential: pending behind its toggle, consent at the provider lands back on its page", async () => {
    const name = `Provider ${suffix}`;
    const credentialId = await createThroughForm({
      name,
      type: "target",
      authType: "oauth2",
      secret: {
        flow: "authorization_code",
        tokenUrl: oauth.tokenUrl,
        authorizationUrl: oauth.authorizationUrl,
        clientId: OAUTH_CLIENT,
        clientSecret: OAUTH_SECRET,
        scope: "openid",
      },
      labels: {
        flow: "Flow",
        tokenUrl: "Token URL",
        authorizationUrl: "Authorization URL",
        clientId: "Client ID",
        clientSecret: "Client secret",
        scope: "Scope",
      },
    });
    await shown(page.getByText(/status: waiting for authorization/i));
    await shown(page.getByRole("link", { name: "Authorize at the provider" }));
    await expectNoSecretOnPage();
    await checkPage(page, "credential-oauth2-pending");

    // Not in the list until asked for.
    await page.getByRole("link", { name: "All credentials" }).click();
    await expect.poll(() => heading("Credentials").count()).toBe(1);
    await expect.poll(() => page.getByText(/no credentials yet|credentials, newest first/i).count()).toBe(1);
    expect(await page.getByRole("link", { name }).count()).toBe(0);
    await page.getByLabel("Show pending authorizations").check();
    await shown(page.getByRole("row", { name: new RegExp(`${name} \\(waiting for authorization\\)`) }));
    await checkPage(page, "credentials-pending");
    await page.getByRole("link", { name }).click();
    await expect.poll(() => heading(name).count()).toBe(1);

    // The provider's own pages (oidc-provider's development login and consent).
    await page.getByRole("link", { name: "Authorize at the provider" }).click();
    await page.getByPlaceholder("Enter any login").fill("alice");
    await page.getByPlaceholder("and password").fill("any");
    await page.getByRole("button", { name: "Sign-in" }).click();
    await page.getByRole("button", { name: "Continue" }).click();

    // Back on the console: the credential's page, authorized.
    await expect
      .poll(() => new URL(page.url()).pathname)
      .toBe(`/organisations/${clientId}/credentials/${credentialId}`);
    expect(new URL(page.url()).searchParams.get("oauth2")).toBe("authorized");
    await expect.poll(() => heading(name).count()).toBe(1);
    await shown(page.getByRole("status").filter({ hasText: /authorization complete/i }));
    await shown(page.getByText(/status: authorized/i));
    const stored = await user.api.get(`/api/clients/${clientId}/credentials/${credentialId}`);
    expect(stored.body.credentials[0].credentialTemporary).toBe(false);
    await expectNoSecretOnPage();
    const html = await page.content();
    for (const token of oauth.issued) expect(html).not.toContain(token);
    await checkPage(page, "credential-oauth2-authorized");

    // The other outcomes the callback can land with are said in words, as an alert.
    await page.goto(`/organisations/${clientId}/credentials/${credentialId}?oauth2=denied`);
    await shown(
      page.getByRole("alert").filter({ hasText: /authorization not completed.*refused at the provider/i }),
    );
    await checkPage(page, "credential-oauth2-denied");
  });
});
