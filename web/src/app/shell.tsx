// The frame of every signed-in page: a skip link, the navigation (a menu button on narrow
// screens), the language picker, the unread notifications count and signing out.
import type { ComponentChildren } from 'preact';
import { useLocation } from 'preact-iso';
import { useEffect, useState } from 'preact/hooks';
import { UnexpectedErrors } from './boundary.js';
import { api, call } from '../api/client.js';
import { LOCALES, useI18n, type UiKey, type UiLocale } from './i18n.js';
import { useMe, useSession } from './session.js';

interface NavItem {
  href: string;
  label: UiKey;
  /** Shown only to staff. */
  staff?: boolean;
}

export const NAV: NavItem[] = [
  { href: '/', label: 'nav.overview' },
  { href: '/subdomains', label: 'nav.subdomains' },
  { href: '/links', label: 'nav.links' },
  { href: '/stats', label: 'nav.stats' },
  { href: '/visits', label: 'nav.visits' },
  { href: '/attacks', label: 'nav.attacks' },
  { href: '/exports', label: 'nav.exports' },
  { href: '/imports', label: 'nav.imports' },
  { href: '/teams', label: 'nav.teams' },
  { href: '/tokens', label: 'nav.tokens' },
  { href: '/webhooks', label: 'nav.webhooks' },
  { href: '/notifications', label: 'nav.notifications' },
  { href: '/staff', label: 'nav.staff', staff: true },
  { href: '/account', label: 'nav.account' },
];

/** Unread notifications, polled every 30 s and after each navigation. */
function useUnread(path: string): number {
  const [unread, setUnread] = useState(0);
  useEffect(() => {
    let stopped = false;
    const poll = async () => {
      try {
        const { meta } = await call(api.GET('/api/v1/notifications', { params: { query: { unread: 'true', limit: 1 } } }));
        if (!stopped) setUnread(typeof meta.unread === 'number' ? meta.unread : 0);
      } catch {
        // The count is a hint: a failed poll keeps the last one.
      }
    };
    const pollNow = () => void poll();
    pollNow();
    const timer = setInterval(pollNow, 30_000);
    // The notifications page marked some read: count again now, not at the next poll.
    window.addEventListener('linktrack:notifications-changed', pollNow);
    return () => {
      stopped = true;
      clearInterval(timer);
      window.removeEventListener('linktrack:notifications-changed', pollNow);
    };
  }, [path]);
  return unread;
}

export function LanguagePicker() {
  const { t, locale, setLocale } = useI18n();
  return (
    <label class="language">
      <span class="visually-hidden">{t('nav.language')}</span>
      <select value={locale} onChange={(event) => setLocale(event.currentTarget.value as UiLocale)} aria-label={t('nav.language')}>
        {LOCALES.map((option) => (
          <option key={option.code} value={option.code} lang={option.code}>
            {option.native}
          </option>
        ))}
      </select>
    </label>
  );
}

export function Shell({ children }: { children: ComponentChildren }) {
  const { t } = useI18n();
  const me = useMe();
  const { signOut } = useSession();
  const { path } = useLocation();
  const [menuOpen, setMenuOpen] = useState(false);
  const unread = useUnread(path);
  useEffect(() => setMenuOpen(false), [path]);
  const current = (href: string) => (href === '/' ? path === '/' : path === href || path.startsWith(`${href}/`));
  return (
    <div class="shell">
      <a class="skip-link" href="#content">
        {t('app.skip')}
      </a>
      <header class="topbar">
        <a class="brand" href="/">
          {t('app.name')}
        </a>
        <button type="button" class="menu-button" aria-expanded={menuOpen} aria-controls="main-nav" onClick={() => setMenuOpen(!menuOpen)}>
          {t('nav.menu')}
        </button>
        <div class="topbar-end">
          <LanguagePicker />
          <span class="whoami" title={t('nav.signed_in_as', { email: me.email })}>
            {me.email}
          </span>
          <button type="button" class="button-quiet" onClick={() => void signOut()}>
            {t('nav.sign_out')}
          </button>
        </div>
      </header>
      <nav id="main-nav" class={`sidenav${menuOpen ? ' open' : ''}`} aria-label={t('nav.main')}>
        <ul>
          {NAV.filter((item) => !item.staff || me.role === 'staff').map((item) => (
            <li key={item.href}>
              <a href={item.href} aria-current={current(item.href) ? 'page' : undefined}>
                {t(item.label)}
                {item.href === '/notifications' && unread > 0 ? (
                  <span class="badge" aria-label={t('nav.unread', { count: unread })}>
                    {unread}
                  </span>
                ) : null}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="content" class="content">
        <UnexpectedErrors />
        {children}
      </main>
    </div>
  );
}
