import { uiMessages } from './define.js';

/** The exports page of the dashboard. */
export const exportsPage = uiMessages({
  en: {
    'exports.title': 'Exports',
  },
  de: {
    'exports.title': 'Exporte',
  },
  fr: {
    'exports.title': 'Exports',
  },
  es: {
    'exports.title': 'Exportaciones',
  },
});
