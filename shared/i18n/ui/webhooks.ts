import { uiMessages } from './define.js';

/** The webhooks page of the dashboard. */
export const webhooks = uiMessages({
  en: {
    'webhooks.title': 'Webhooks',
  },
  de: {
    'webhooks.title': 'Webhooks',
  },
  fr: {
    'webhooks.title': 'Webhooks',
  },
  es: {
    'webhooks.title': 'Webhooks',
  },
});
