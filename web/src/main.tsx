// The owner dashboard: a client of the public API v1 over the session cookie (same origin).
// Pages load on demand, so the first page carries only the shell and itself.
import { render, type FunctionComponent } from 'preact';
import { ErrorBoundary, lazy, LocationProvider, Route, Router, useLocation } from 'preact-iso';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { setApiLanguage } from './api/client.js';
import { I18nContext, initialLocale, rememberLocale, translator, type UiLocale } from './app/i18n.js';
import { PageBoundary } from './app/boundary.js';
import { SessionProvider, useSession } from './app/session.js';
import { Shell } from './app/shell.js';
import { ErrorState, Loading } from './app/ui.js';
import { LoginPage } from './pages/login.js';
import { NotFoundPage } from './pages/not-found.js';
import { OverviewPage } from './pages/overview.js';
import { ForgotPasswordPage, ResetPasswordPage } from './pages/password-reset.js';
import { TotpRequiredPage } from './pages/two-factor.js';
import './styles.css';

const SubdomainsPage = lazy(() => import('./pages/subdomains.js').then((module) => module.SubdomainsPage));
const LinksPage = lazy(() => import('./pages/links.js').then((module) => module.LinksPage));
const LinksBulkPage = lazy(() => import('./pages/links-bulk.js').then((module) => module.LinksBulkPage));
const StatsPage = lazy(() => import('./pages/stats.js').then((module) => module.StatsPage));
const VisitsPage = lazy(() => import('./pages/visits.js').then((module) => module.VisitsPage));
const AttacksPage = lazy(() => import('./pages/attacks.js').then((module) => module.AttacksPage));
const ExportsPage = lazy(() => import('./pages/exports.js').then((module) => module.ExportsPage));
const ImportsPage = lazy(() => import('./pages/imports.js').then((module) => module.ImportsPage));
const TeamsPage = lazy(() => import('./pages/teams.js').then((module) => module.TeamsPage));
const InvitationAcceptPage = lazy(() => import('./pages/invitation-accept.js').then((module) => module.InvitationAcceptPage));
const TokensPage = lazy(() => import('./pages/tokens.js').then((module) => module.TokensPage));
const WebhooksPage = lazy(() => import('./pages/webhooks.js').then((module) => module.WebhooksPage));
const NotificationsPage = lazy(() => import('./pages/notifications.js').then((module) => module.NotificationsPage));
const AccountPage = lazy(() => import('./pages/account.js').then((module) => module.AccountPage));
const StaffPage = lazy(() => import('./pages/staff.js').then((module) => module.StaffPage));

function SignedInRoutes() {
  return (
    <Shell>
      <ErrorBoundary>
        <PageBoundary>
          <Router>
            <Route path="/" component={OverviewPage} />
            <Route path="/subdomains" component={SubdomainsPage} />
            <Route path="/subdomains/:name" component={SubdomainsPage} />
            <Route path="/links" component={LinksPage} />
            <Route path="/links/bulk" component={LinksBulkPage} />
            <Route path="/links/:id" component={LinksPage} />
            <Route path="/stats" component={StatsPage} />
            <Route path="/stats/:scope/:id" component={StatsPage} />
            <Route path="/visits" component={VisitsPage} />
            <Route path="/attacks" component={AttacksPage} />
            <Route path="/exports" component={ExportsPage} />
            <Route path="/imports" component={ImportsPage} />
            <Route path="/teams" component={TeamsPage} />
            <Route path="/teams/:id" component={TeamsPage} />
            <Route path="/invitations/accept" component={InvitationAcceptPage} />
            <Route path="/tokens" component={TokensPage} />
            <Route path="/webhooks" component={WebhooksPage} />
            <Route path="/webhooks/:id" component={WebhooksPage} />
            <Route path="/notifications" component={NotificationsPage} />
            <Route path="/staff" component={StaffPage} />
            <Route path="/account" component={AccountPage} />
            <Route path="/login" component={GoHome} />
            <Route default component={NotFoundPage} />
          </Router>
        </PageBoundary>
      </ErrorBoundary>
    </Shell>
  );
}

/**
 * Where a sign-in may send the browser: a path of this origin only. `//host`, `/\host` (browsers
 * read a backslash as a slash), schemes and control characters go to the overview instead.
 */
function safeNext(next: string | undefined): string {
  const control = Array.from(next ?? '').some((char) => char < ' ' || char === '\u007f');
  if (!next?.startsWith('/') || next.startsWith('//') || next.includes('\\') || control) return '/';
  if (!URL.canParse(next, location.origin)) return '/';
  const url = new URL(next, location.origin);
  return url.origin === location.origin ? `${url.pathname}${url.search}${url.hash}` : '/';
}

/** `/login` while signed in: on to where the sign-in was asked from, or the overview. */
function GoHome() {
  const { route, query } = useLocation();
  useEffect(() => {
    try {
      route(safeNext(query.next), true);
    } catch {
      // Never left on a spinner: whatever the browser refused, the overview.
      route('/', true);
    }
  }, []);
  return <Loading />;
}

const INVITATION_PATH = '/invitations/accept';
const keepPendingInvitation = (hash: string) => {
  try {
    sessionStorage.setItem('linktrack:invitation', hash);
  } catch {
    // Storage refused: the link has to be opened again after signing in.
  }
};

/** Pages shown whether or not someone is signed in: a forgotten password's, which a reset link opens. */
const OPEN_PAGES: Record<string, FunctionComponent> = { '/login/forgot': ForgotPasswordPage, '/login/reset': ResetPasswordPage };

function Root() {
  const { session, refresh } = useSession();
  const { path, route } = useLocation();
  const Open = OPEN_PAGES[path];
  useEffect(() => {
    // Signed out anywhere but the sign-in page: go there, remembering where to come back to.
    if (session.state === 'signed-out' && path !== '/login' && !Open) {
      // An invitation's secret is in the fragment, which must not go into a URL the server sees: it waits in this tab.
      if (path === INVITATION_PATH && location.hash) keepPendingInvitation(location.hash);
      route(`/login?next=${encodeURIComponent(path)}`, true);
    }
  }, [session.state, path]);
  if (Open) return <Open />;
  if (session.state === 'loading') return <Loading />;
  if (session.state === 'error') return <ErrorState error={session.error} retry={() => void refresh()} />;
  if (session.state === 'signed-out') return <LoginPage reason={session.reason} />;
  // A staff account while staff must use two-factor sign-in and it has not set it up: only that (the API refuses the rest).
  if (session.me.totp_enrolment_required) return <TotpRequiredPage />;
  return <SignedInRoutes />;
}

function App() {
  const [locale, setLocaleState] = useState<UiLocale>(initialLocale);
  const i18n = useMemo(() => {
    setApiLanguage(locale);
    document.documentElement.lang = locale;
    return {
      locale,
      t: translator(locale),
      setLocale: (next: UiLocale) => {
        rememberLocale(next);
        setLocaleState(next);
      },
    };
  }, [locale]);
  return (
    <I18nContext.Provider value={i18n}>
      <LocationProvider>
        <SessionProvider>
          <Root />
        </SessionProvider>
      </LocationProvider>
    </I18nContext.Provider>
  );
}

const root = document.getElementById('app')!;
// index.html's static "Loading…" line is removed before the first render: Preact would otherwise
// keep it beside a first page whose root is not a `<p>` (the password-reset page's).
root.textContent = '';
render(<App />, root);
