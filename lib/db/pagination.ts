/**
 * Generic pagination of section 8: query `page` (default 1) and `limit` (default 20, max 100);
 * responses carry `pagination: {page, limit, total, pages}`.
 */
import { z } from "zod";
import { parseInput } from "#lib/shared/parse-input.ts";

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

export const PaginationQuery = z.object({
  page: z.coerce.number().int().min(1).max(100_000).default(1),
  limit: z.coerce.number().int().min(1).max(MAX_PAGE_SIZE).default(DEFAULT_PAGE_SIZE),
});

export interface PageRequest {
  page: number;
  limit: number;
}

export interface Pagination extends PageRequest {
  total: number;
  pages: number;
}

export function parsePageRequest(query: Record<string, string | undefined>): PageRequest {
  return parseInput(PaginationQuery, { page: query.page, limit: query.limit }, "query");
}

export function paginate<T>(
  items: readonly T[],
  request: PageRequest,
): { items: T[]; pagination: Pagination } {
  const start = (request.page - 1) * request.limit;
  return {
    items: items.slice(start, start + request.limit),
    pagination: {
      page: request.page,
      limit: request.limit,
      total: items.length,
      pages: Math.ceil(items.length / request.limit),
    },
  };
}
