/** A tiny history-based router: the path is state, links push it, popstate restores it. */
import {
  type AnchorHTMLAttributes,
  createContext,
  type ReactNode,
  useContext,
  useEffect,
  useState,
} from "react";

interface Location {
  path: string;
  search: URLSearchParams;
}

const read = (): Location => ({
  path: window.location.pathname,
  search: new URLSearchParams(window.location.search),
});

const RouterContext = createContext<Location>(read());
const listeners = new Set<() => void>();

export function navigate(to: string, options: { replace?: boolean } = {}): void {
  if (options.replace) window.history.replaceState(null, "", to);
  else window.history.pushState(null, "", to);
  for (const listener of listeners) listener();
}

export function Router({ children }: { children: ReactNode }) {
  const [location, setLocation] = useState(read);
  useEffect(() => {
    const update = () => setLocation(read());
    listeners.add(update);
    window.addEventListener("popstate", update);
    return () => {
      listeners.delete(update);
      window.removeEventListener("popstate", update);
    };
  }, []);
  return <RouterContext.Provider value={location}>{children}</RouterContext.Provider>;
}

export const useLocation = () => useContext(RouterContext);

/** A link that navigates without a reload (modified clicks keep the browser's behaviour). */
export function Link({
  href,
  children,
  ...rest
}: AnchorHTMLAttributes<HTMLAnchorElement> & { href: string }) {
  return (
    <a
      href={href}
      {...rest}
      onClick={(event) => {
        rest.onClick?.(event);
        if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey)
          return;
        event.preventDefault();
        navigate(href);
      }}
    >
      {children}
    </a>
  );
}
