/**
 * What the Credentials and Targets pages share: a page of a list (the API's `page` and `limit`,
 * its `pagination` answer), a form over an operation's request schema (values, client-side
 * validation, the API's field errors next to their field), the organisation's proxies (to name the
 * ones a deletion takes with it), and dates as the pages show them.
 */
import { useQuery } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { api } from "../api/client";
import { ApiError, must } from "../api/errors";
import { bodyOf, branchOf, type FieldErrors, type FormValue, type JsonSchema, validate } from "../schema";

export const formatDate = (value?: string | null) => (value ? new Date(value).toLocaleString() : "—");

/**
 * A form over a request schema: its value, the client-side errors of the last submit, and the
 * body to send once it is valid (empty optional fields left out).
 */
export function useSchemaForm(schema: JsonSchema, initial: FormValue = {}) {
  const [value, setValue] = useState<FormValue>(initial);
  const [errors, setErrors] = useState<FieldErrors>({});
  return {
    value,
    setValue,
    errors,
    /** The body when the value is valid; otherwise shows the errors, focuses the first, answers null. */
    submit(event: FormEvent<HTMLFormElement>): FormValue | null {
      event.preventDefault();
      const form = event.currentTarget;
      const found = validate(schema, value);
      setErrors(found);
      if (Object.keys(found).length > 0) {
        // After React has marked the fields: the first invalid one takes the focus.
        setTimeout(() => form.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus(), 0);
        return null;
      }
      return bodyOf(schema, value, initial);
    },
    reset(next: FormValue = initial) {
      setValue(next);
      setErrors({});
    },
  };
}

/**
 * The API's field errors at the form's field paths: the API names a field by its last segment
 * (`keyName` for `secret.keyName`), so a name the top level lacks is looked for one level down.
 */
export function apiFieldErrors(schema: JsonSchema, value: FormValue, error: unknown): FieldErrors {
  if (!(error instanceof ApiError)) return {};
  const effective = schema.oneOf ? branchOf(schema, value) : schema;
  const out: FieldErrors = {};
  for (const [name, message] of Object.entries(error.fields)) {
    if (effective.properties?.[name]) {
      out[name] = message;
      continue;
    }
    const parent = Object.entries(effective.properties ?? {}).find(([, field]) => {
      const inner = field.oneOf ? branchOf(field, (value[name] ?? {}) as FormValue) : field;
      return inner.properties?.[name] !== undefined;
    })?.[0];
    out[parent ? `${parent}.${name}` : name] = message;
  }
  return out;
}

/** The field names (any level) of a schema: a form's error shows apart only when none of them is named. */
export function fieldNames(schema: JsonSchema, value: FormValue): string[] {
  const effective = schema.oneOf ? branchOf(schema, value) : schema;
  const names: string[] = [];
  for (const [name, field] of Object.entries(effective.properties ?? {})) {
    names.push(name);
    const inner = field.oneOf ? branchOf(field, (value[name] ?? {}) as FormValue) : field;
    names.push(...Object.keys(inner.properties ?? {}));
  }
  return names;
}

export interface ProxyLink {
  proxyId: string;
  proxyName: string;
  proxyRegion: string;
  proxyProxyCredentialId: string;
  proxyTargetId: string;
  proxyTargetCredentialId: string;
}

export const proxiesKey = (clientId: string) => ["proxies", clientId, "all"] as const;

/** Every proxy of the organisation (all pages, 100 at a time): what a deletion takes with it. */
export function useAllProxies(clientId: string, enabled = true) {
  return useQuery({
    queryKey: proxiesKey(clientId),
    enabled,
    queryFn: async (): Promise<ProxyLink[]> => {
      const all: ProxyLink[] = [];
      for (let page = 1; page <= 50; page++) {
        const answer = must(
          await api.GET("/api/clients/{clientId}/proxies", {
            params: { path: { clientId }, query: { page, limit: 100 } },
          }),
        );
        all.push(...answer.proxies);
        if (page >= answer.pagination.pages) break;
      }
      return all;
    },
  });
}

/** The signed-in user's membership of the organisation (its roles); undefined for a non-member. */
export function useMembership(clientId: string, userId: string) {
  return useQuery({
    queryKey: ["members", clientId, "one", userId],
    queryFn: async () =>
      must(
        await api.GET("/api/clients/{clientId}/members/{userId}", {
          params: { path: { clientId, userId } },
        }),
      ).members[0],
  });
}

/** Roles, highest first: each holds the ones below it. */
const RANKED = ["owner", "admin", "devops", "user", "reader"] as const;
type Role = (typeof RANKED)[number];

/**
 * What the signed-in member may do here, from their roles: `write` (DevOps and above: create, edit,
 * delete, test against a full URL) and `test` (User and above: the credential and token tests). The
 * API decides in the end; this only leaves out controls that would be refused. Unknown yet: both.
 */
export function useAbilities(clientId: string, userId: string): { write: boolean; test: boolean } {
  const member = useMembership(clientId, userId);
  const roles = (member.data?.roles ?? []) as Role[];
  // Until the roles are known, no control shows (it would flash, then go for a reader). A caller
  // who is not a member (an MSP's team, a system administrator) sees them: the API decides.
  if (member.isPending) return { write: false, test: false };
  if (!member.data) return { write: true, test: true };
  const holds = (lowest: Role) => roles.some((role) => RANKED.indexOf(role) <= RANKED.indexOf(lowest));
  return { write: holds("devops"), test: holds("user") };
}
