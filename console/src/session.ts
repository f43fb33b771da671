/** The signed-in user, from GET /auth/session (null when signed out). */
import { useQuery } from "@tanstack/react-query";
import { api } from "./api/client";
import { must } from "./api/errors";

export const SESSION_KEY = ["session"] as const;

export function useSession() {
  return useQuery({
    queryKey: SESSION_KEY,
    queryFn: async () => {
      const result = await api.GET("/auth/session");
      if (result.response.status === 401) return null;
      return must(result).users[0] ?? null;
    },
    staleTime: 30_000,
  });
}
