import { uiMessages } from './define.js';

/** The links page of the dashboard. */
export const links = uiMessages({
  en: {
    'links.title': 'Links',
  },
  de: {
    'links.title': 'Links',
  },
  fr: {
    'links.title': 'Liens',
  },
  es: {
    'links.title': 'Enlaces',
  },
});
