import { uiMessages } from './define.js';

/** The attacks page of the dashboard. */
export const attacks = uiMessages({
  en: {
    'attacks.title': 'Attacks',
  },
  de: {
    'attacks.title': 'Angriffe',
  },
  fr: {
    'attacks.title': 'Attaques',
  },
  es: {
    'attacks.title': 'Ataques',
  },
});
