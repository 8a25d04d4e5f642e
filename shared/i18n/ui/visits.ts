import { uiMessages } from './define.js';

/** The visits page of the dashboard. */
export const visits = uiMessages({
  en: {
    'visits.title': 'Visits',
  },
  de: {
    'visits.title': 'Besuche',
  },
  fr: {
    'visits.title': 'Visites',
  },
  es: {
    'visits.title': 'Visitas',
  },
});
