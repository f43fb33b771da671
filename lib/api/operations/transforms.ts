/** Request and response transforms on a proxy (spec 2.10, 4.10): user code that reshapes traffic. */
import { z } from "zod";
import { access, MessageResponse, operation, pathParams, wrapped } from "#lib/api/operation.ts";
import {
  StoredResponseBody,
  StoredResponseHeader,
  StoredStatus,
  TransformItem,
} from "#lib/db/entities/transform.ts";
import { MAX_TRANSFORM_CODE_BYTES, TRANSFORM_CODE_MESSAGE } from "#lib/domain/transforms/code.ts";
import {
  CreateRequestTransformBody,
  CreateResponseTransformBody,
  MAX_TRANSFORMS_PER_PROXY,
  type TransformKind,
  UpdateRequestTransformBody,
  UpdateResponseTransformBody,
} from "#lib/domain/transforms/schema.ts";
import {
  createTransform,
  deleteTransform,
  getTransform,
  listTransforms,
  updateTransform,
} from "#lib/domain/transforms.ts";

const {
  entity: _entity,
  transformKind: _kind,
  transformVersion: _version,
  codeVersion: _codeVersion,
  codeGzip: _codeGzip,
  codeChunks: _codeChunks,
  codeBytes: _codeBytes,
  responseHeaders: _responseHeaders,
  responseBody: _responseBody,
  responseStatus: _responseStatus,
  ...sharedFields
} = TransformItem.shape;

const common = {
  ...sharedFields,
  pKey: z.string().describe("The proxy id"),
  sKey: z.string().describe("The transform id"),
  parentId: z.string().describe("The proxy id"),
  userId: z.string().describe("The user who created the transform"),
  transformRegion: z.string().describe("The proxy's region"),
  priority: z.number().describe("Integer 0-1000; higher wins when several transforms match"),
};
const Code = z
  .string()
  .describe("The TypeScript or JavaScript source as saved (create, get and update only)");

const schemas = {
  request: z.object({ ...common, code: Code.optional() }),
  response: z.object({
    ...common,
    responseHeaders: z.array(StoredResponseHeader).describe("Checks of the target's answer headers"),
    responseBody: z.array(StoredResponseBody).describe("Checks of the target's JSON answer body"),
    responseStatus: z.array(StoredStatus).describe("Checks of the target's status ({operator, value})"),
    code: Code.optional(),
  }),
};

const CODE_RULES = `\`code\` (at most ${MAX_TRANSFORM_CODE_BYTES} bytes) is TypeScript or JavaScript with a function default export, no import, require() or import(), and no reference to process, fetch, globalThis, eval, Function or require; a refusal answers 400 \`{message: "${TRANSFORM_CODE_MESSAGE}", errors}\`, one line per problem with its line and column (docs/transforms.md).`;

function operationsOf(kind: TransformKind) {
  const Kind = kind === "request" ? "Request" : "Response";
  const wrapper = kind === "request" ? "requestTransforms" : "responseTransforms";
  const base = `/api/clients/{clientId}/proxies/{proxyId}/${kind}-transforms`;
  const ProxyParams = pathParams("clientId", "proxyId");
  const ItemParams = pathParams("clientId", "proxyId", "transformId");
  const schema = schemas[kind];
  const group = "transforms" as const;
  // The wrapper key is the kind's: one declaration for both kinds, checked against the schema at run time.
  const answer = (message: string, items: unknown[]) => ({ message, [wrapper]: items }) as never;
  return [
    operation({
      id: `list${Kind}Transforms`,
      method: "GET",
      path: base,
      group,
      summary: `List a proxy's ${kind} transforms`,
      description: `Lists the ${kind} transforms of a proxy, oldest first (at most ${MAX_TRANSFORMS_PER_PROXY}, so not paged), without their code.`,
      access: access.client("reader"),
      effect: "read",
      params: ProxyParams,
      response: { status: 200, schema: wrapped(wrapper, schema) },
      errors: [403, 404],
      handler: async ({ member, params }) => ({
        body: answer(`${Kind} transforms retrieved`, await listTransforms(member, kind, params.proxyId)),
      }),
    }),
    operation({
      id: `create${Kind}Transform`,
      method: "POST",
      path: base,
      group,
      summary: `Create a ${kind} transform on a proxy`,
      description: `Adds a ${kind} transform: \`transformMode\` (all, or conditional with \`effect\` include/exclude over the predicates), \`transformActive\` and \`code\` are required; \`priority\`, the predicates${kind === "response" ? ", the response predicates responseHeaders, responseBody, responseStatus" : ""} and \`notes\` are optional. ${CODE_RULES} At most ${MAX_TRANSFORMS_PER_PROXY} per proxy (400). Takes effect on the next request.`,
      access: access.client("devops"),
      effect: "write",
      params: ProxyParams,
      body: kind === "request" ? CreateRequestTransformBody : CreateResponseTransformBody,
      response: { status: 201, schema: wrapped(wrapper, schema) },
      errors: [403, 404, 409],
      handler: async ({ member, params, body }) => ({
        status: 201,
        body: answer(`${Kind} transform created`, [
          await createTransform(member, kind, params.proxyId, body),
        ]),
      }),
    }),
    operation({
      id: `get${Kind}Transform`,
      method: "GET",
      path: `${base}/{transformId}`,
      group,
      summary: `Get a ${kind} transform`,
      description: "Answers one transform of the proxy, with its code.",
      access: access.client("reader"),
      effect: "read",
      params: ItemParams,
      response: { status: 200, schema: wrapped(wrapper, schema) },
      errors: [403, 404],
      handler: async ({ member, params }) => ({
        body: answer(`${Kind} transform retrieved`, [
          await getTransform(member, kind, params.proxyId, params.transformId),
        ]),
      }),
    }),
    operation({
      id: `update${Kind}Transform`,
      method: "PUT",
      path: `${base}/{transformId}`,
      group,
      summary: `Update a ${kind} transform`,
      description: `Partial update: the fields given replace the stored ones, \`null\` clears an optional field; include \`code\` only to change it. ${CODE_RULES} With invalid code nothing changes (the old code keeps running). Answers the whole transform with its current code.`,
      access: access.client("devops"),
      effect: "write",
      params: ItemParams,
      body: kind === "request" ? UpdateRequestTransformBody : UpdateResponseTransformBody,
      response: { status: 200, schema: wrapped(wrapper, schema) },
      errors: [403, 404, 409],
      handler: async ({ member, params, body }) => ({
        body: answer(`${Kind} transform updated`, [
          await updateTransform(member, kind, params.proxyId, params.transformId, body),
        ]),
      }),
    }),
    operation({
      id: `delete${Kind}Transform`,
      method: "DELETE",
      path: `${base}/{transformId}`,
      group,
      summary: `Delete a ${kind} transform`,
      description:
        "Deletes the transform and its stored code at once; the next request is not transformed. Answers `{message}`.",
      access: access.client("devops"),
      effect: "delete",
      params: ItemParams,
      response: { status: 200, schema: MessageResponse },
      errors: [403, 404, 409],
      handler: async ({ member, params }) => {
        await deleteTransform(member, kind, params.proxyId, params.transformId);
        return { body: { message: `${Kind} transform deleted` } };
      },
    }),
  ];
}

export const transformOperations = [...operationsOf("request"), ...operationsOf("response")];
