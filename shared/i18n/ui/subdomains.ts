import { uiMessages } from './define.js';

/** The subdomains page of the dashboard. */
export const subdomains = uiMessages({
  en: {
    'subdomains.title': 'Subdomains',
  },
  de: {
    'subdomains.title': 'Subdomains',
  },
  fr: {
    'subdomains.title': 'Sous-domaines',
  },
  es: {
    'subdomains.title': 'Subdominios',
  },
});
