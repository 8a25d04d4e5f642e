import { uiMessages } from './define.js';

/** The public page of a subdomain (`{name}.{BASE_DOMAIN}/`), rendered on the server. */
export const publicPage = uiMessages({
  en: {
    'public.title': 'Public page of {name}',
  },
  de: {
    'public.title': 'Öffentliche Seite von {name}',
  },
  fr: {
    'public.title': 'Page publique de {name}',
  },
  es: {
    'public.title': 'Página pública de {name}',
  },
});
