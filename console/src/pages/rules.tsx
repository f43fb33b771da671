/**
 * Access rules of a credential, a proxy or a target (spec 2.8, 4.8): listed in evaluation order
 * (highest priority first, as the API answers them), created from the API's request schema in the
 * flat (`pathPattern`, `pathPresence`) or the nested (`path`) form of the path check, deleted after
 * a confirmation. Rules cannot be edited (the API offers no update): delete and create.
 */

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useId, useState } from "react";
import { api } from "../api/client";
import { errorText, must } from "../api/errors";
import { PAGE_SIZE, Pager, type Pagination } from "../pager";
import { type FormValue, requestSchema } from "../schema-form";
import { useSession } from "../session";
import { ConfirmDialog, FormError, Status } from "../ui";
import { useAbilities } from "./credentials-common";
import { SchemaForm } from "./proxies-common";

export type RuleOwnerKind = "credential" | "proxy" | "target";

export interface Rule {
  ruleId: string;
  effect: "allow" | "deny";
  priority: number;
  methods: string[];
  path: { pattern: string; presence: "present" | "absent" } | null;
  headerChecks: Array<{ name: string; pattern: string | null; presence: "present" | "absent" }>;
  queryChecks: Array<{ name: string; pattern: string | null; presence: "present" | "absent" }>;
  regexFlags: string;
  notes: string;
}

const NOUN: Record<RuleOwnerKind, string> = { credential: "credential", proxy: "proxy", target: "target" };
const SCOPE: Record<RuleOwnerKind, string> = {
  credential: "every proxy that uses this credential as its proxy credential",
  proxy: "this proxy's requests",
  target: "every proxy that forwards to this target",
};

/** The three rule operations of one owner kind, typed by the generated client. */
function rulesApi(kind: RuleOwnerKind, clientId: string, id: string) {
  const query = (page: number) => ({ page, limit: PAGE_SIZE });
  switch (kind) {
    case "credential": {
      const path = { clientId, credentialId: id };
      return {
        list: async (page: number) =>
          must(
            await api.GET("/api/clients/{clientId}/credentials/{credentialId}/rules", {
              params: { path, query: query(page) },
            }),
          ),
        create: async (body: FormValue) =>
          must(
            await api.POST("/api/clients/{clientId}/credentials/{credentialId}/rules", {
              params: { path },
              body: body as never,
            }),
          ),
        remove: async (ruleId: string) =>
          must(
            await api.DELETE("/api/clients/{clientId}/credentials/{credentialId}/rules/{ruleId}", {
              params: { path: { ...path, ruleId } },
            }),
          ),
        schemaPath: "/api/clients/{clientId}/credentials/{credentialId}/rules",
      };
    }
    case "proxy": {
      const path = { clientId, proxyId: id };
      return {
        list: async (page: number) =>
          must(
            await api.GET("/api/clients/{clientId}/proxies/{proxyId}/rules", {
              params: { path, query: query(page) },
            }),
          ),
        create: async (body: FormValue) =>
          must(
            await api.POST("/api/clients/{clientId}/proxies/{proxyId}/rules", {
              params: { path },
              body: body as never,
            }),
          ),
        remove: async (ruleId: string) =>
          must(
            await api.DELETE("/api/clients/{clientId}/proxies/{proxyId}/rules/{ruleId}", {
              params: { path: { ...path, ruleId } },
            }),
          ),
        schemaPath: "/api/clients/{clientId}/proxies/{proxyId}/rules",
      };
    }
    case "target": {
      const path = { clientId, targetId: id };
      return {
        list: async (page: number) =>
          must(
            await api.GET("/api/clients/{clientId}/targets/{targetId}/rules", {
              params: { path, query: query(page) },
            }),
          ),
        create: async (body: FormValue) =>
          must(
            await api.POST("/api/clients/{clientId}/targets/{targetId}/rules", {
              params: { path },
              body: body as never,
            }),
          ),
        remove: async (ruleId: string) =>
          must(
            await api.DELETE("/api/clients/{clientId}/targets/{targetId}/rules/{ruleId}", {
              params: { path: { ...path, ruleId } },
            }),
          ),
        schemaPath: "/api/clients/{clientId}/targets/{targetId}/rules",
      };
    }
  }
}

const checkText = (check: Rule["headerChecks"][number]) =>
  check.presence === "absent"
    ? `${check.name} absent`
    : check.pattern
      ? `${check.name} matching ${check.pattern}`
      : `${check.name} present`;

/** One rule in words: "Deny GET, POST when the path matches ^/admin". */
export function ruleSummary(rule: Rule): string {
  const parts: string[] = [];
  parts.push(rule.methods.length ? rule.methods.join(", ") : "every method");
  if (rule.path)
    parts.push(
      rule.path.presence === "absent"
        ? `path not matching ${rule.path.pattern}`
        : `path matching ${rule.path.pattern}`,
    );
  if (rule.headerChecks.length) parts.push(`headers: ${rule.headerChecks.map(checkText).join("; ")}`);
  if (rule.queryChecks.length) parts.push(`query: ${rule.queryChecks.map(checkText).join("; ")}`);
  if (rule.regexFlags) parts.push(`flags ${rule.regexFlags}`);
  return `${rule.effect === "allow" ? "Allow" : "Deny"} ${parts.join(", ")}`;
}

export function RulesSection({
  clientId,
  owner,
}: {
  clientId: string;
  owner: { kind: RuleOwnerKind; id: string };
}) {
  const queryClient = useQueryClient();
  const titleId = useId();
  const formId = useId();
  const [page, setPage] = useState(1);
  const [pathForm, setPathForm] = useState<"flat" | "nested">("flat");
  const [deleting, setDeleting] = useState<Rule | null>(null);
  // Creating and deleting rules needs the devops role or above: others see the list only.
  const can = useAbilities(clientId, useSession().data?.userId ?? "");
  const calls = rulesApi(owner.kind, clientId, owner.id);
  const key = ["rules", clientId, owner.kind, owner.id] as const;
  const rules = useQuery({
    queryKey: [...key, page],
    queryFn: async () => {
      const answer = await calls.list(page);
      return { rules: answer.rules as Rule[], pagination: answer.pagination as Pagination };
    },
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: key });
  const remove = useMutation({
    mutationFn: (rule: Rule) => calls.remove(rule.ruleId),
    onSuccess: refresh,
  });
  const schema = requestSchema("POST", calls.schemaPath);
  const noun = NOUN[owner.kind];
  const list = rules.data?.rules ?? [];
  return (
    <section aria-labelledby={titleId}>
      <h2 id={titleId}>Rules</h2>
      <p>
        Rules apply to {SCOPE[owner.kind]}. They are evaluated highest priority first (0 to 1000); the first
        rule that matches a request allows or denies it, and a request no rule matches gets the {noun}'s
        default rule effect. A new rule takes effect on the next request. Rules cannot be edited: delete one
        and create another.
      </p>
      {rules.isPending && <p>Loading…</p>}
      {rules.isError && <p role="alert">Error: {errorText(rules.error)}</p>}
      {remove.isSuccess && <Status>The rule of priority {remove.variables.priority} was deleted.</Status>}
      <FormError error={remove.error} />
      {rules.data && list.length === 0 && (
        <p>
          No rules yet: the default rule effect decides every request.{" "}
          <a href={`#${formId}`}>Add the first rule</a>.
        </p>
      )}
      {list.length > 0 && (
        <ol aria-label={`Rules of the ${noun}, in evaluation order`} className="rows">
          {list.map((rule) => (
            <li key={rule.ruleId}>
              <p className="row-title">
                <strong>Priority {rule.priority}</strong>: {ruleSummary(rule)}
                {rule.notes ? ` (${rule.notes})` : ""}
              </p>
              {can.write && (
                <button
                  type="button"
                  className="secondary"
                  aria-label={`Delete the rule of priority ${rule.priority}`}
                  onClick={() => setDeleting(rule)}
                >
                  Delete
                </button>
              )}
            </li>
          ))}
        </ol>
      )}
      <Pager label="rules" pagination={rules.data?.pagination} onPage={setPage} />
      {can.write && (
        <div id={formId}>
          <fieldset className="choice">
            <legend>Path check written as</legend>
            <label className="checkbox">
              <input
                type="radio"
                name={`${formId}-path-form`}
                checked={pathForm === "flat"}
                onChange={() => setPathForm("flat")}
              />{" "}
              Flat fields (pathPattern, pathPresence)
            </label>
            <label className="checkbox">
              <input
                type="radio"
                name={`${formId}-path-form`}
                checked={pathForm === "nested"}
                onChange={() => setPathForm("nested")}
              />{" "}
              A nested path object (path: pattern, presence)
            </label>
          </fieldset>
          <SchemaForm
            key={pathForm}
            title="New rule"
            headingLevel={3}
            schema={schema}
            initial={{ effect: "deny" }}
            omit={pathForm === "flat" ? ["path"] : ["pathPattern", "pathPresence"]}
            labels={{
              pathPattern: "Path pattern",
              pathPresence: "Path presence",
              path: "Path",
              "path.pattern": "Path pattern",
              "path.presence": "Path presence",
              regexFlags: "Regular expression flags",
            }}
            hints={{
              priority: "0 to 1000; higher is evaluated first.",
              methods: "HTTP methods (none: every method).",
              pathPattern: "A regular expression matched against the path after the proxy's URL.",
              "path.pattern": "A regular expression matched against the path after the proxy's URL.",
            }}
            submitLabel="Create rule"
            onSubmit={async (body) => {
              const answer = await calls.create(body);
              await refresh();
              return answer;
            }}
            success={() => "Rule created."}
          />
        </div>
      )}
      <ConfirmDialog
        open={deleting !== null}
        title={`Delete the rule of priority ${deleting?.priority ?? ""}?`}
        confirmLabel="Delete rule"
        onCancel={() => setDeleting(null)}
        onConfirm={() => {
          if (deleting) remove.mutate(deleting);
          setDeleting(null);
        }}
      >
        <p>{deleting ? ruleSummary(deleting) : ""}.</p>
        <p>
          Requests are no longer checked against it from the next one on; only this rule goes. It cannot be
          restored, only created again.
        </p>
      </ConfirmDialog>
    </section>
  );
}
