/** Access rules on credentials, proxies and targets (spec 4.8): list, create, delete; no update. */
import { createRule, deleteRule, listRules, type RuleParentKind } from "#lib/domain/access-rules.ts";
import { type ApiRequest, createApiHandler, type RouteTable } from "#lib/http/api-handler.ts";
import { paginate, parsePageRequest } from "#lib/http/pagination.ts";
import { pathParam } from "#lib/http/request.ts";

const PARENTS: [RuleParentKind, string, string][] = [
  ["credential", "credentials", "credentialId"],
  ["proxy", "proxies", "proxyId"],
  ["target", "targets", "targetId"],
];

const routes: RouteTable = {};
for (const [kind, collection, idParam] of PARENTS) {
  const base = `/api/clients/{clientId}/${collection}/{${idParam}}/rules`;
  const ids = (req: ApiRequest) =>
    [pathParam(req, "clientId"), req.caller.userId, kind, pathParam(req, idParam)] as const;
  routes[`GET ${base}`] = async (req) => {
    const page = parsePageRequest(req.query);
    const { items, pagination } = paginate(await listRules(...ids(req)), page);
    return { body: { message: "Rules retrieved", rules: items, pagination } };
  };
  routes[`POST ${base}`] = async (req) => {
    const rule = await createRule(...ids(req), req.body ?? {});
    return { status: 201, body: { message: "Rule created", rules: [rule] } };
  };
  routes[`DELETE ${base}/{ruleId}`] = async (req) => {
    await deleteRule(...ids(req), pathParam(req, "ruleId"));
    return { body: { message: "Rule deleted" } };
  };
}

export const handler = createApiHandler(routes);
