import { uiMessages } from './define.js';

/** The notifications page of the dashboard. */
export const notifications = uiMessages({
  en: {
    'notifications.title': 'Notifications',
  },
  de: {
    'notifications.title': 'Benachrichtigungen',
  },
  fr: {
    'notifications.title': 'Notifications',
  },
  es: {
    'notifications.title': 'Notificaciones',
  },
});
