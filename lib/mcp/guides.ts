/**
 * What the guide and discovery tools (and the schema resources) answer, built from the service's
 * own declarations: the secret schemas and usage of each auth type (lib/vault/secret-schemas.ts),
 * the configured regions and data-plane addresses (lib/config.ts), and the tool names of the
 * operations (lib/mcp/tools.ts). Nothing here restates a rule the vault or the registry holds.
 */
import { z } from "zod";
import { getConfig } from "#lib/config.ts";
import { CreateProxyBody } from "#lib/http/resource-schemas.ts";
import { AUTH_TYPE_USAGE, AUTH_TYPES, type AuthType, SECRET_SCHEMAS } from "#lib/vault/secret-schemas.ts";
import { toolNameOf } from "./tools.ts";

const jsonSchema = (schema: z.ZodType) => {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" });
  return rest as Record<string, unknown>;
};

/** The JSON Schema of an auth type's secret (resource `service://schemas/credentials/<type>`). */
export const secretSchemaOf = (authType: AuthType) => jsonSchema(SECRET_SCHEMAS[authType]);

/** The JSON Schema of create_proxy's body (resource `service://schemas/proxy/create`). */
export const createProxySchema = () => jsonSchema(CreateProxyBody);

/** How a caller of a proxy presents each proxy auth type (docs/caller-authentication.md). */
const CALLER_PRESENTS: Partial<Record<AuthType, string>> = {
  apiKey:
    "header `keyName` with `<prefix> <keyValue>` (or the bare keyValue), or the query parameter `keyName` when placement is query",
  bearer: "`Authorization: <prefix> <token>`; the prefix defaults to Bearer",
  jwt: "`Authorization: <token>` (or `<prefix> <token>`)",
  basicAuth: "`Authorization: Basic base64(username:password)`",
  jwtVerify:
    "`Authorization: Bearer <JWT>`, verified against jwksUri (or sharedSecret for HS*), issuer, audience, subject and requiredClaims",
};

/** The recommended setup order of spec 4.15, with the tools to call. */
export function setupGuide() {
  return {
    steps: [
      {
        tool: toolNameOf("createTarget"),
        what: "Create the target: the API behind the proxy (targetBaseURL, targetTestPath, targetRegion).",
      },
      {
        tool: toolNameOf("createCredential"),
        what: "Create the proxy credential (credentialType `proxy`): what callers of the proxy present. See get_auth_type_guide.",
      },
      {
        tool: toolNameOf("createCredential"),
        what: "Create the target credential (credentialType `target`): what the gateway adds to each forwarded request.",
      },
      {
        tool: toolNameOf("createProxy"),
        what: "Create the proxy binding the proxy credential, the target and the target credential (same client and region; ids from the answers above, never invented).",
      },
      {
        tool: "execute_proxy_read_request",
        what: "Send a GET through the proxy, authenticated as its proxy credential, to check the setup end to end.",
      },
    ],
    notes: [
      "All ids come from earlier answers (list_clients, the create_* results); never invent one.",
      "Secrets are write-only: they are never returned, and echoed secrets are redacted.",
      "Ask the user to confirm before any delete, and warn before setting a proxy or rule inactive.",
    ],
  };
}

/** How each auth type is configured: where it may be used, its secret's shape, what a caller sends. */
export function authTypeGuide(authType?: AuthType) {
  const types = authType ? [authType] : [...AUTH_TYPES];
  return {
    authTypes: types.map((type) => ({
      authType: type,
      usableAs: [...AUTH_TYPE_USAGE[type]],
      secretSchema: secretSchemaOf(type),
      secretSchemaUri: `service://schemas/credentials/${type}`,
      ...(CALLER_PRESENTS[type] ? { callerPresents: CALLER_PRESENTS[type] } : {}),
    })),
  };
}

/** The configured regions and where each one's data plane answers. */
export function regionsDiscovery() {
  const config = getConfig();
  return {
    homeRegion: config.homeRegion,
    regions: config.regions.map((region) => ({
      region,
      dataPlaneUrl: config.dataPlaneUrls[region] ?? null,
    })),
  };
}

/** The auth types, where each may be used, and the required keys of its secret. */
export function authTypesDiscovery() {
  return {
    authTypes: AUTH_TYPES.map((type) => {
      const schema = secretSchemaOf(type);
      return {
        authType: type,
        usableAs: [...AUTH_TYPE_USAGE[type]],
        secretKeys: Object.keys((schema.properties ?? {}) as object),
        requiredSecretKeys: (schema.required ?? []) as string[],
        secretSchemaUri: `service://schemas/credentials/${type}`,
      };
    }),
  };
}
