import { uiMessages } from './define.js';

/** The tokens page of the dashboard. */
export const tokens = uiMessages({
  en: {
    'tokens.title': 'API tokens',
  },
  de: {
    'tokens.title': 'API-Tokens',
  },
  fr: {
    'tokens.title': 'Jetons d’API',
  },
  es: {
    'tokens.title': 'Tokens de API',
  },
});
