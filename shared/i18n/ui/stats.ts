import { uiMessages } from './define.js';

/** The stats page of the dashboard. */
export const stats = uiMessages({
  en: {
    'stats.title': 'Statistics',
  },
  de: {
    'stats.title': 'Statistiken',
  },
  fr: {
    'stats.title': 'Statistiques',
  },
  es: {
    'stats.title': 'Estadísticas',
  },
});
