/**
 * The deployment's regions, for the forms' region fields. The console is built once for any
 * deployment, so its generated schemas leave regions as text; the OpenAPI document the API serves
 * (`/openapi.json`, public) lists the configured regions as the enum of every region field. It is
 * read once per page load, only when a form shows a region field; until then (or if it fails) the
 * field stays a text field and the API decides.
 */
import { useQuery } from "@tanstack/react-query";
import { regionsOf } from "./schema";

/** The deployment's regions (once read), and whether they are still being read. */
export function useDeploymentRegions(enabled: boolean): { regions?: string[]; loading: boolean } {
  const query = useQuery({
    queryKey: ["deployment-regions"],
    enabled,
    staleTime: Number.POSITIVE_INFINITY,
    retry: false,
    queryFn: async () => {
      const answer = await fetch("/openapi.json", { credentials: "omit" });
      if (!answer.ok) return null;
      return regionsOf(await answer.json()) ?? null;
    },
  });
  return { regions: query.data ?? undefined, loading: enabled && query.isPending };
}
