/** The frame (skip link, header, navigation, main) and the routes. */
import { useQueryClient } from "@tanstack/react-query";
import { Suspense, useEffect } from "react";
import { setUnauthorizedHandler } from "./api/errors";
import { OrgFrame } from "./org-frame";
import { ORG_ROUTES } from "./org-routes";
import { ForgotPassword, ResetPassword, SignIn, SignUp, Verify } from "./pages/auth";
import { Home } from "./pages/home";
import { Invite, InviteSignedOut, inviteIdOf } from "./pages/invite";
import { MspFrame, matchMspRoute } from "./pages/msp-routes";
import { MspSwitcher } from "./pages/msp-switcher";
import { Notifications, useUnreadCount } from "./pages/notifications";
import { Organisation } from "./pages/organisation";
import { RemovePasskey } from "./pages/recovery";
import { Keys, Settings, useSignOut } from "./pages/settings";
import { Link, matchPath, navigate, useLocation } from "./router";
import { SESSION_KEY, useSession } from "./session";

const PUBLIC: Record<string, () => React.JSX.Element> = {
  "/sign-up": SignUp,
  "/verify-email": Verify,
  "/sign-in": SignIn,
  "/forgot-password": ForgotPassword,
  "/reset-password": ResetPassword,
  "/remove-passkey": RemovePasskey,
};

const TITLES: Record<string, string> = {
  "/": "Organisations",
  "/sign-up": "Sign up",
  "/verify-email": "Verify",
  "/sign-in": "Sign in",
  "/forgot-password": "Forgot password",
  "/reset-password": "Reset password",
  "/remove-passkey": "Remove a passkey",
  "/settings": "Settings",
  "/settings/keys": "Keys",
  "/notifications": "Notifications",
};

export function App() {
  const { path } = useLocation();
  const session = useSession();
  const user = session.data ?? null;
  const signOut = useSignOut();

  // An organisation's pages: its overview (members, invites, settings), then ORG_ROUTES in order.
  const overview = matchPath("/organisations/{clientId}", path);
  let orgRoute: {
    title: string;
    params: Record<string, string>;
    route?: (typeof ORG_ROUTES)[number];
  } | null = overview && { title: "Organisation", params: overview };
  for (const route of ORG_ROUTES) {
    if (orgRoute) break;
    const params = matchPath(route.pattern, path);
    if (params) orgRoute = { title: route.title, params, route };
  }
  const isOrganisation = orgRoute !== null;
  const mspRoute = matchMspRoute(path);

  useEffect(() => {
    const title =
      TITLES[path] ?? (inviteIdOf(path) ? "Invitation" : (orgRoute?.title ?? mspRoute?.title ?? "Not found"));
    document.title = `${title} · Proxy Gateway`;
  }, [path, orgRoute?.title, mspRoute?.title]);
  const queryClient = useQueryClient();
  useEffect(() => {
    // A 401 on a page: check the session again; once it is gone, the page sends to Sign-in (below).
    setUnauthorizedHandler(() => void queryClient.invalidateQueries({ queryKey: SESSION_KEY }));
  }, [queryClient]);

  const PublicPage = PUBLIC[path];
  const inviteId = inviteIdOf(path);
  const unread = useUnreadCount(user?.userId);
  // The invite page explains itself to a signed-out visitor instead of sending them to Sign-in.
  const needsSignIn = !PublicPage && !inviteId && !session.isPending && !user;
  useEffect(() => {
    if (needsSignIn) navigate(`/sign-in?next=${encodeURIComponent(path)}`, { replace: true });
  }, [needsSignIn, path]);

  let page: React.JSX.Element;
  if (PublicPage) page = <PublicPage />;
  else if (inviteId && !session.isPending && !user) page = <InviteSignedOut inviteId={inviteId} />;
  else if (session.isPending || !user) page = <p>Loading…</p>;
  else if (inviteId) page = <Invite inviteId={inviteId} user={user} />;
  else if (path === "/notifications") page = <Notifications user={user} />;
  else if (path === "/") page = <Home />;
  else if (path === "/settings") page = <Settings user={user} />;
  else if (path === "/settings/keys") page = <Keys user={user} />;
  else if (mspRoute)
    page = (
      <MspFrame mspId={mspRoute.mspId} path={path}>
        <Suspense fallback={<p>Loading…</p>}>
          <mspRoute.Page key={path} mspId={mspRoute.mspId} params={mspRoute.params} user={user} />
        </Suspense>
      </MspFrame>
    );
  else if (orgRoute?.params.clientId) {
    const clientId = orgRoute.params.clientId;
    const Page = orgRoute.route?.page;
    page = (
      <OrgFrame clientId={clientId} path={path}>
        {Page ? (
          <Suspense fallback={<p>Loading…</p>}>
            <Page key={path} clientId={clientId} params={orgRoute.params} user={user} />
          </Suspense>
        ) : (
          <Organisation key={clientId} clientId={clientId} userId={user.userId} />
        )}
      </OrgFrame>
    );
  } else
    page = (
      <section aria-labelledby="not-found-title">
        <h1 id="not-found-title">Page not found</h1>
        <p>
          <Link href="/">Go to your organisations</Link>
        </p>
      </section>
    );

  const current = (href: string) => (path === href ? ("page" as const) : undefined);
  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="site-header">
        <p className="product">
          <Link href="/">Proxy Gateway</Link>
        </p>
        <nav aria-label="Main">
          <ul className="inline">
            {user ? (
              <>
                <li>
                  <Link href="/" aria-current={current("/") ?? (isOrganisation ? "page" : undefined)}>
                    Organisations
                  </Link>
                </li>
                <li>
                  <Link href="/notifications" aria-current={current("/notifications")}>
                    Notifications
                  </Link>
                  {unread ? <span className="badge"> ({unread} unread)</span> : null}
                </li>
                <li>
                  <Link href="/settings" aria-current={current("/settings")}>
                    Settings
                  </Link>
                </li>
                <li>
                  <button type="button" className="link" onClick={() => signOut.mutate()}>
                    Sign out
                  </button>
                </li>
              </>
            ) : (
              <>
                <li>
                  <Link href="/sign-in" aria-current={current("/sign-in")}>
                    Sign in
                  </Link>
                </li>
                <li>
                  <Link href="/sign-up" aria-current={current("/sign-up")}>
                    Sign up
                  </Link>
                </li>
              </>
            )}
          </ul>
        </nav>
        {user && user.userMsps.length > 0 && <MspSwitcher mspIds={user.userMsps} path={path} />}
      </header>
      <main id="main" tabIndex={-1}>
        {page}
      </main>
    </>
  );
}
