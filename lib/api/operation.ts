/**
 * The operation registry's vocabulary. Every Core API operation is declared once, as an
 * `Operation` in a module of lib/api/operations/ (one per resource group): its id, method, path,
 * Lambda group, schemas in and out, the access it needs, what it does, and the function it
 * calls. API Gateway's routes (CDK), the local runner's routing, each Lambda's dispatch, the
 * OpenAPI document, the permission matrix in the docs and (later) the MCP tools are derived from
 * these declarations; nothing else lists routes.
 */
import { z } from "zod";
import type { ClientAccess, MspAccess } from "#lib/domain/access.ts";
import { methodNotAllowed } from "#lib/http/errors.ts";
import type { FunctionGroupName, HttpMethod } from "#lib/infra/api-manifest.ts";
import type { ClientRole, MspRole } from "#lib/shared/roles.ts";

/** Who is calling, as established by the authorizer; reaches the domain. */
export interface Principal {
  userId: string;
  tokenId: string;
  systemAdmin: boolean;
  /** Signed in with the console's session cookie (not an API token): the console itself is calling. */
  session?: boolean;
}

/**
 * The access an operation needs, checked once by the dispatcher before the domain runs:
 * - `public`: no token (the OAuth2 provider's redirect);
 * - `user`: any authenticated user (their own record, creating an organisation);
 * - `self`: the path's `{userId}` must be the caller's own id;
 * - `client`: a member of the path's `{clientId}` holding at least `role` (a non-member gets 404,
 *   as if the organisation did not exist);
 * - `msp`: a member of the path's `{mspId}` holding at least the MSP `role` (a system administrator
 *   acts as msp_owner); with `{clientId}` in the path, that client must be linked to the MSP;
 * - `systemAdmin`: an operator of the deployment.
 */
export type Access =
  | { kind: "public" }
  | { kind: "user" }
  | { kind: "self" }
  | ClientRoleAccess
  | MspRoleAccess
  | { kind: "systemAdmin" };

/** The access of an operation on an organisation: its handler receives the `member`. */
export interface ClientRoleAccess {
  kind: "client";
  role: ClientRole;
}

/** The access of an MSP API operation: its handler receives the `msp`. */
export interface MspRoleAccess {
  kind: "msp";
  role: MspRole;
}

export const access = {
  public: { kind: "public" },
  user: { kind: "user" },
  self: { kind: "self" },
  client: (role: ClientRole): ClientRoleAccess => ({ kind: "client", role }),
  msp: (role: MspRole): MspRoleAccess => ({ kind: "msp", role }),
  systemAdmin: { kind: "systemAdmin" },
} as const satisfies Record<string, Access | ((role: ClientRole) => Access) | ((role: MspRole) => Access)>;

/** What an operation does to stored data (MCP marks read-only and destructive tools with it). */
export type Effect = "read" | "write" | "delete";

/**
 * What the access check grants, by the declared access `A`: the `member` for `client` access,
 * the `msp` for `msp` access, neither otherwise. For `A` = `Access` (an operation whose access is
 * not known, as the dispatcher sees it) it is the union of the three.
 */
export type Granted<A extends Access> = A extends ClientRoleAccess
  ? { member: ClientAccess; msp?: undefined }
  : A extends MspRoleAccess
    ? { msp: MspAccess; member?: undefined }
    : { member?: undefined; msp?: undefined };

/**
 * What a handler receives: parsed and checked input, the principal and what its access `A`
 * grants (`Granted`): a client-role operation's handler has its `member`, an MSP operation's its
 * `msp`, by type.
 */
export type OperationInput<P, Q, B, A extends Access = Access> = Granted<A> & OperationFields<P, Q, B>;

interface OperationFields<P, Q, B> {
  principal: Principal;
  params: P;
  query: Q;
  body: B;
  requestId: string;
  /** The Core API's public base URL (`{base_url}`), for links back to it. */
  baseUrl: string;
  /** The request's headers, names lower-cased (empty for an MCP tool call). The /auth routes read `cookie`. */
  headers: Readonly<Record<string, string>>;
  /** The request's body text as received (undefined for an MCP tool call): a signed webhook verifies it. */
  rawBody?: string;
}

export interface OperationResult<R> {
  /** Defaults to the operation's declared success status. */
  status?: number;
  /** An object for JSON answers; the text itself when the response declares another `contentType`. */
  body: R;
  headers?: Record<string, string>;
}

/** Another media type of a JSON answer: its text, rendered from the shaped JSON body. */
export interface ResponseAlternative<T> {
  contentType: string;
  render: (body: T) => string;
}

type AnyObject = z.ZodType<Record<string, unknown>>;
/** A JSON object, or (with a non-JSON `contentType`) the text of the answer. */
type AnyResponse = z.ZodType<Record<string, unknown> | string>;

export interface Operation<
  P extends AnyObject = AnyObject,
  Q extends AnyObject = AnyObject,
  B extends z.ZodType = z.ZodType,
  R extends AnyResponse = AnyResponse,
  A extends Access = Access,
> {
  /** camelCase; its snake_case form is the MCP tool name. */
  id: string;
  method: HttpMethod;
  /** API Gateway resource path with `{param}` placeholders. */
  path: string;
  group: FunctionGroupName;
  /** One line, imperative ("Create a proxy"). */
  summary: string;
  /** For a person (and an agent): what it does, what it needs, what it answers. */
  description: string;
  /** Also types the handler's input: what this access grants (`Granted`). */
  access: A;
  effect: Effect;
  params: P;
  query: Q;
  /** Undefined: the operation takes no body (any body sent is ignored, as before). */
  body: B | undefined;
  /**
   * The success answer: its status and the schema that shapes it (undeclared fields never leave).
   * `contentType` (default JSON) is for the few answers that are not JSON, the API reference page:
   * the handler's body is then that text, sent as it is.
   */
  response: {
    status: number;
    schema: R;
    contentType?: string;
    /**
     * Other representations of the same JSON answer (the usage report's CSV), chosen by the
     * request's `Accept` (lib/http/content-negotiation.ts; JSON when not asked for): the
     * dispatcher shapes the body with `schema` first, then `render`s it as `contentType`.
     */
    alternatives?: readonly ResponseAlternative<z.output<R>>[];
  };
  /** Error statuses the operation may answer besides the ones every operation may (400, 401, 429, 503). */
  errors: readonly number[];
  /**
   * The OpenAPI document's view where it says more than the validating schemas can (issue 23):
   * `body`, a schema documenting the body in place of `body` (a credential's secret by `authType`,
   * which the domain checks with its own messages); `examples` where a generated one would be
   * wrong or unrealistic. Never used to validate.
   */
  documentation?: { body?: z.ZodType; examples?: { body?: unknown; response?: unknown } };
  /** Set on routes that exist only to answer 405 (unsupportedOperation). */
  unsupported?: { message: string; allow: readonly string[] };
  /**
   * Calls one domain function and builds the answer. TypeScript checks the answer's body against
   * the input type of `response.schema` (what the schema accepts); at run time the dispatcher
   * parses it with the schema, which also drops every undeclared field (docs/registry.md).
   */
  handler: (
    input: OperationInput<z.infer<P>, z.infer<Q>, z.infer<B>, A>,
  ) => Promise<OperationResult<z.input<R>>>;
}

/**
 * Declares an operation; infers the handler's input and output types from the schemas and its
 * access. The answer is the registry's erased `Operation`: the dispatcher grants what the
 * declared access names (lib/api/dispatch.ts `checkAccess`), which is what the handler was typed
 * with here.
 */
export function operation<
  P extends AnyObject,
  Q extends AnyObject,
  B extends z.ZodType,
  R extends AnyResponse,
  A extends Access,
>(
  declaration: Omit<Operation<P, Q, B, R, A>, "params" | "query" | "body" | "errors"> & {
    params?: P;
    query?: Q;
    body?: B;
    errors?: readonly number[];
  },
): Operation {
  return {
    ...declaration,
    params: (declaration.params ?? z.object({})) as P,
    query: (declaration.query ?? z.object({})) as Q,
    body: declaration.body,
    errors: declaration.errors ?? [],
  } as unknown as Operation;
}

// ---- response building blocks ----

/** `{message}`: the answer of an operation that returns nothing else. */
export const MessageResponse = z.object({ message: z.string() });

export const PaginationSchema = z.object({
  page: z.number().int(),
  limit: z.number().int(),
  total: z.number().int(),
  pages: z.number().int(),
});

/** `{message, <wrapper>: [item]}`, the spec's wrapper convention. */
export const wrapped = <K extends string, I extends z.ZodType>(wrapper: K, item: I) =>
  z.object({ message: z.string() }).extend({ [wrapper]: z.array(item) } as Record<K, z.ZodArray<I>>);

/** `{message, <wrapper>: [item], pagination}`. */
export const paged = <K extends string, I extends z.ZodType>(wrapper: K, item: I) =>
  wrapped(wrapper, item).extend({ pagination: PaginationSchema });

/** Path parameters: each a decoded, non-empty string (decoding and length are checked before). */
export const pathParams = <K extends string>(...names: K[]) =>
  z.object(Object.fromEntries(names.map((name) => [name, z.string()])) as Record<K, z.ZodString>);

/**
 * A route the spec lists as unsupported: it exists only to answer 405, with `Allow` and a message
 * naming what to use instead, to any authenticated caller; nothing is read or stored. Its path
 * parameters are declared from the path, and `response.status` is that 405.
 */
export function unsupportedOperation(declaration: {
  id: string;
  method: HttpMethod;
  path: string;
  group: FunctionGroupName;
  summary: string;
  message: string;
  allow: string[];
}): Operation {
  const names = [...declaration.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1] as string);
  return operation({
    id: declaration.id,
    method: declaration.method,
    path: declaration.path,
    group: declaration.group,
    summary: declaration.summary,
    description: `Not supported: answers 405 with Allow: ${declaration.allow.join(", ")}. ${declaration.message}.`,
    access: access.user,
    effect: "write",
    params: pathParams(...names),
    response: { status: 405, schema: MessageResponse },
    errors: [405],
    unsupported: { message: declaration.message, allow: declaration.allow },
    handler: async () => {
      throw methodNotAllowed(declaration.message, declaration.allow);
    },
  });
}
