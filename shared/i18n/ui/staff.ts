import { uiMessages } from './define.js';

/** The staff page of the dashboard. */
export const staff = uiMessages({
  en: {
    'staff.title': 'Staff',
  },
  de: {
    'staff.title': 'Mitarbeitende',
  },
  fr: {
    'staff.title': 'Équipe',
  },
  es: {
    'staff.title': 'Personal',
  },
});
