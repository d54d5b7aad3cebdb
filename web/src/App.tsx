// The shell: header with navigation and the account links, and the routes. Every screen but the shell is loaded
// on demand, so the first load of a page carries only what that page needs.
import { Suspense, useEffect, useRef } from "react";
import { Link, Route, Switch, useLocation } from "wouter";
import { useAuth } from "./lib/auth";
import { screen } from "./lib/screen";
import { SignOutButton } from "./screens/SignOut";

const Tasks = screen(() => import("./screens/Tasks"));
const Annotate = screen(() => import("./screens/Annotate"));
const Validate = screen(() => import("./screens/Validate"));
const SignIn = screen(() => import("./screens/SignIn"));
const Register = screen(() => import("./screens/Register"));
const Leaderboards = screen(() => import("./screens/Leaderboards"));
const Me = screen(() => import("./screens/Me"));
const Manage = screen(() => import("./screens/owner/Manage"));
const Models = screen(() => import("./screens/Models"));
const Admin = screen(() => import("./screens/Admin"));
const Crowd = screen(() => import("./screens/Crowd"));

/** The screen a path shows, by the routes below (null: the not-found page), for main.tsx to preload. */
const SCREENS: [RegExp, { preload: () => Promise<void> }][] = [
  [/^\/$/, Tasks],
  [/^\/tasks\/[^/]+\/manage(\/|$)/, Manage],
  [/^\/tasks\/[^/]+\/?$/, Annotate],
  [/^\/validate(\/|$)/, Validate],
  [/^\/signin\/?$/, SignIn],
  [/^\/register\/?$/, Register],
  [/^\/leaderboards(\/|$)/, Leaderboards],
  [/^\/me\/?$/, Me],
  [/^\/models(\/|$)/, Models],
  [/^\/admin\/?$/, Admin],
  [/^\/crowd\/[^/]+\/[^/]+\/?$/, Crowd],
];

export function preloadScreen(path: string): Promise<void> {
  const found = SCREENS.find(([pattern]) => pattern.test(path));
  return found ? found[1].preload() : Promise.resolve();
}

function NavLink({ href, children }: { href: string; children: string }) {
  const [location] = useLocation();
  const current = href === "/" ? location === "/" || location.startsWith("/tasks") : location.startsWith(href);
  return (
    <Link href={href} aria-current={current ? "page" : undefined}>
      {children}
    </Link>
  );
}

/** Moves focus to the page's heading after a navigation, so screen readers announce the new page. */
function useFocusOnNavigation(ref: React.RefObject<HTMLElement | null>) {
  const [location] = useLocation();
  const previous = useRef(location);
  useEffect(() => {
    if (previous.current === location) return;
    previous.current = location;
    ref.current?.focus();
  }, [location, ref]);
}

export function App() {
  const { session } = useAuth();
  const main = useRef<HTMLElement>(null);
  useFocusOnNavigation(main);
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <Link href="/" className="brand">
          Dynaforge
        </Link>
        <nav aria-label="Main">
          <NavLink href="/">Tasks</NavLink>
          <NavLink href="/validate">Validate</NavLink>
          <NavLink href="/leaderboards">Leaderboards</NavLink>
          <NavLink href="/models">Models</NavLink>
        </nav>
        <div className="account">
          {session ? (
            <>
              <span className="who">{session.username}</span>
              {session.crowd ? <NavLink href={session.crowd}>Study</NavLink> : null}
              <NavLink href="/me">Me</NavLink>
              <SignOutButton />
            </>
          ) : (
            <>
              <Link href="/signin">Sign in</Link>
              <Link href="/register">Register</Link>
            </>
          )}
        </div>
      </header>
      <main id="main" ref={main} tabIndex={-1}>
        <Suspense fallback={<p className="muted">Loading…</p>}>
          <Switch>
            <Route path="/" component={Tasks} />
            <Route path="/tasks/:code">{(params) => <Annotate code={params.code} />}</Route>
            <Route path="/tasks/:code/manage/:section?">
              {(params) => <Manage code={params.code} section={params.section} />}
            </Route>
            <Route path="/validate">
              <Validate />
            </Route>
            <Route path="/validate/:code">{(params) => <Validate code={params.code} />}</Route>
            <Route path="/signin" component={SignIn} />
            <Route path="/register" component={Register} />
            <Route path="/leaderboards">
              <Leaderboards />
            </Route>
            <Route path="/leaderboards/:code">{(params) => <Leaderboards code={params.code} />}</Route>
            <Route path="/me" component={Me} />
            <Route path="/admin" component={Admin} />
            <Route path="/crowd/:platform/:study">
              {(params) => <Crowd platform={params.platform} study={params.study} />}
            </Route>
            <Route path="/models">
              <Models />
            </Route>
            <Route path="/models/:code">{(params) => <Models code={params.code} />}</Route>
            <Route path="/models/:code/:id">{(params) => <Models code={params.code} id={params.id} />}</Route>
            <Route>
              <h1>Not found</h1>
              <p>
                There is no page here. <Link href="/">See the tasks</Link>.
              </p>
            </Route>
          </Switch>
        </Suspense>
      </main>
    </>
  );
}
