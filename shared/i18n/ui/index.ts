// The user interface's messages, merged per locale: the dashboard bundles this module, and the
// server's catalogue (shared/i18n) adds it to the API's messages, so both speak from one source.
import { account } from './account.js';
import { attacks } from './attacks.js';
import { common } from './common.js';
import { domains } from './domains.js';
import { exportsPage } from './exports.js';
import { importsPage } from './imports.js';
import { links } from './links.js';
import { linksBulk } from './links-bulk.js';
import { linksProtection } from './links-protection.js';
import { linksRouting } from './links-routing.js';
import { login } from './login.js';
import { notifications } from './notifications.js';
import { overview } from './overview.js';
import { publicPage } from './public-page.js';
import { qrLogo } from './qr-logo.js';
import { staff } from './staff.js';
import { stats } from './stats.js';
import { subdomains } from './subdomains.js';
import { teams } from './teams.js';
import { tokens } from './tokens.js';
import { twoFactor } from './two-factor.js';
import { visits } from './visits.js';
import { webhooks } from './webhooks.js';

const areas = [
  common,
  login,
  account,
  overview,
  subdomains,
  links,
  stats,
  visits,
  attacks,
  exportsPage,
  importsPage,
  tokens,
  teams,
  webhooks,
  notifications,
  staff,
  publicPage,
  twoFactor,
  linksProtection,
  linksBulk,
  linksRouting,
  domains,
  qrLogo,
] as const;

type Area = (typeof areas)[number];
type KeysOf<A> = A extends { en: Record<infer K, string> } ? K : never;

/** Every key of the user interface's messages. */
export type UiKey = KeysOf<Area>;
export type UiCatalogue = Record<UiKey, string>;
export type UiLocale = 'en' | 'de' | 'fr' | 'es';

const merge = (locale: UiLocale): UiCatalogue => Object.assign({}, ...areas.map((area) => area[locale])) as UiCatalogue;

/** The user interface's messages of each supported locale. */
export const UI_MESSAGES: Record<UiLocale, UiCatalogue> = { en: merge('en'), de: merge('de'), fr: merge('fr'), es: merge('es') };
