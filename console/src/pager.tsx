/**
 * The console's lists a page at a time: the page size, the API's `pagination` object, and the
 * Previous / Next navigation with where the reader is (nothing when the list fits one page).
 */

/** Items per page of the console's lists. */
export const PAGE_SIZE = 20;

/** The `pagination` object of the API's list answers. */
export interface Pagination {
  page: number;
  limit: number;
  total: number;
  pages: number;
}

export function Pager({
  label,
  pagination,
  onPage,
}: {
  /** What the list holds ("clients"): the navigation is named "Pages of <label>". */
  label: string;
  pagination: Pagination | undefined;
  onPage: (page: number) => void;
}) {
  if (!pagination || pagination.pages <= 1) return null;
  const { page, pages, total } = pagination;
  return (
    <nav aria-label={`Pages of ${label}`} className="inline-form pager">
      <button type="button" className="secondary" disabled={page <= 1} onClick={() => onPage(page - 1)}>
        Previous page
      </button>
      <p aria-live="polite">
        Page {page} of {pages} ({total} in all)
      </p>
      <button type="button" className="secondary" disabled={page >= pages} onClick={() => onPage(page + 1)}>
        Next page
      </button>
    </nav>
  );
}
