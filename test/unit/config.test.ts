/** Configuration is read once from the environment and fails loudly when it is wrong. */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { getAccountConfig } from "#lib/account-config.ts";
import { getConfig, resetConfig } from "#lib/config.ts";

let saved: NodeJS.ProcessEnv;

const OPTIONAL = [
  "HOME_REGION",
  "REGIONS",
  "KMS_KEY_ALIAS",
  "EMAIL_SENDER",
  "APP_URL",
  "DATA_PLANE_URLS",
  "STRIPE_SECRET_KEY",
  "STRIPE_SECRET_ARN",
  "STRIPE_API_BASE",
  "OAUTH_SIGNING_KEY_ID",
  "CLIENT_DELETION_GRACE_DAYS",
  "WEBAUTHN_RP_ID",
  "WEBAUTHN_ORIGIN",
  "WEBAUTHN_RP_NAME",
  "PORT",
  "SIGN_UP_POLICY",
  "SIGN_UP_ALLOWED_DOMAINS",
  "AUTH_REQUESTS_PER_IP_PER_MINUTE",
];

beforeEach(() => {
  saved = { ...process.env };
  resetConfig();
});

afterEach(() => {
  for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
  Object.assign(process.env, saved);
  resetConfig();
});

function minimalEnv(): void {
  for (const name of OPTIONAL) delete process.env[name];
  process.env.TABLE_NAME = "gateway-table";
}

describe("getConfig", () => {
  it("fails loudly, naming the variable, when TABLE_NAME is missing", () => {
    delete process.env.TABLE_NAME;
    expect(() => getConfig()).toThrow(/Invalid configuration: TABLE_NAME/);
  });

  it("fails when HOME_REGION is not one of REGIONS", () => {
    process.env.HOME_REGION = "ap-south-1";
    process.env.REGIONS = "us-east-1,eu-west-1";
    expect(() => getConfig()).toThrow("Invalid configuration: HOME_REGION ap-south-1 is not in REGIONS");
  });

  it.each([
    ["KMS_KEY_ALIAS", "proxy-gateway"],
    ["EMAIL_SENDER", "not-an-email"],
    ["APP_URL", "not a url"],
    ["REGIONS", " , "],
    ["DATA_PLANE_URLS", "{not json"],
    ["DATA_PLANE_URLS", '{"us-east-1": 5}'],
    ["CLIENT_DELETION_GRACE_DAYS", "-1"],
    ["CLIENT_DELETION_GRACE_DAYS", "lots"],
    ["PORT", "http"],
  ])("rejects %s=%j, naming it", (name, value) => {
    process.env[name] = value;
    expect(() => getConfig()).toThrow(new RegExp(`Invalid configuration: .*${name}`));
  });

  it("applies the defaults", () => {
    minimalEnv();
    expect(getConfig()).toEqual({
      tableName: "gateway-table",
      homeRegion: "us-east-1",
      regions: ["us-east-1", "eu-west-1"],
      kmsKeyAlias: "alias/proxy-gateway",
      emailSender: "no-reply@example.com",
      appUrl: "http://localhost:3000",
      dataPlaneUrls: {},
      stripe: { secretKey: undefined, secretArn: undefined, apiBase: undefined },
      clientDeletionGraceDays: 30,
      oauthSigningKeyId: "alias/proxy-gateway-oauth-signing",
    });
  });

  it.each([
    ["SIGN_UP_POLICY", "closed"],
    ["SIGN_UP_ALLOWED_DOMAINS", "example.com, not a domain"],
    ["AUTH_REQUESTS_PER_IP_PER_MINUTE", "0"],
    ["WEBAUTHN_ORIGIN", "not a url"],
  ])("rejects the account setting %s=%j, naming it", (name, value) => {
    minimalEnv();
    process.env[name] = value;
    expect(() => getAccountConfig()).toThrow(new RegExp(`Invalid configuration: .*${name}`));
  });

  it("applies the account settings' defaults", () => {
    minimalEnv();
    expect(getAccountConfig()).toEqual({
      signUp: { policy: "open", allowedDomains: [] },
      authRequestsPerIpPerMinute: 300,
      webauthn: { rpId: "localhost", origin: "http://localhost:3000", rpName: "API gateway" },
    });
  });

  it("defaults APP_URL to the local Core API on PORT", () => {
    minimalEnv();
    process.env.PORT = "4010";
    expect(getConfig().appUrl).toBe("http://localhost:4010");
  });

  it("reads the accounts policy: invite-only, the allowed domains lower-cased, the per-IP limit", () => {
    minimalEnv();
    Object.assign(process.env, {
      SIGN_UP_POLICY: "invite-only",
      SIGN_UP_ALLOWED_DOMAINS: " Example.com ,example.org,",
      AUTH_REQUESTS_PER_IP_PER_MINUTE: "60",
    });
    expect(getAccountConfig()).toMatchObject({
      signUp: { policy: "invite-only", allowedDomains: ["example.com", "example.org"] },
      authRequestsPerIpPerMinute: 60,
    });
  });

  it("derives the passkeys' relying party from APP_URL unless WEBAUTHN_* says otherwise", () => {
    minimalEnv();
    process.env.APP_URL = "https://console.example.com:8443/app/";
    expect(getAccountConfig().webauthn).toEqual({
      rpId: "console.example.com",
      origin: "https://console.example.com:8443",
      rpName: "API gateway",
    });
    resetConfig();
    Object.assign(process.env, {
      WEBAUTHN_RP_ID: "example.com",
      WEBAUTHN_ORIGIN: "https://login.example.com/ignored/path",
      WEBAUTHN_RP_NAME: "Example gateway",
    });
    expect(getAccountConfig().webauthn).toEqual({
      rpId: "example.com",
      origin: "https://login.example.com",
      rpName: "Example gateway",
    });
  });

  it("takes the OAuth signing key from OAUTH_SIGNING_KEY_ID, or derives its alias from KMS_KEY_ALIAS", () => {
    minimalEnv();
    process.env.KMS_KEY_ALIAS = "alias/gw-x";
    expect(getConfig().oauthSigningKeyId).toBe("alias/gw-x-oauth-signing");
    resetConfig();
    process.env.OAUTH_SIGNING_KEY_ID = "arn:aws:kms:us-east-1:111122223333:key/abcd";
    expect(getConfig().oauthSigningKeyId).toBe("arn:aws:kms:us-east-1:111122223333:key/abcd");
  });

  it("parses the values it is given", () => {
    minimalEnv();
    Object.assign(process.env, {
      HOME_REGION: "eu-west-1",
      REGIONS: " us-east-1 , eu-west-1,,ap-southeast-2 ",
      APP_URL: "https://app.example.com/",
      DATA_PLANE_URLS: '{"eu-west-1":"https://eu.example.com"}',
      CLIENT_DELETION_GRACE_DAYS: "0",
      STRIPE_SECRET_ARN: "arn:aws:secretsmanager:eu-west-1:1:secret:stripe",
    });
    expect(getConfig()).toMatchObject({
      homeRegion: "eu-west-1",
      regions: ["us-east-1", "eu-west-1", "ap-southeast-2"],
      appUrl: "https://app.example.com",
      dataPlaneUrls: { "eu-west-1": "https://eu.example.com" },
      clientDeletionGraceDays: 0,
      stripe: { secretArn: "arn:aws:secretsmanager:eu-west-1:1:secret:stripe" },
    });
  });

  it("reads the environment once until resetConfig", () => {
    minimalEnv();
    const first = getConfig();
    process.env.TABLE_NAME = "another-table";
    expect(getConfig()).toBe(first);
    expect(getConfig().tableName).toBe("gateway-table");
    resetConfig();
    expect(getConfig().tableName).toBe("another-table");
  });
});
