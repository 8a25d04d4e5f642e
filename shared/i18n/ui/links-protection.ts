import { uiMessages } from './define.js';

/** Issue 40, protected links in the link form: the password (write-only) and the expiry fallback. */
export const linksProtection = uiMessages({
  en: {
    'links.protection.legend': 'Protection',
    'links.protection.password': 'Password',
    'links.protection.password_hint': 'Visitors must enter it before they are redirected (4–128 characters). It is never shown again.',
    'links.protection.password_new': 'New password',
    'links.protection.password_keep_hint': 'This link has a password. Leave empty to keep it.',
    'links.protection.remove_password': 'Remove the password',
    'links.protection.fallback': 'Fallback URL',
    'links.protection.fallback_hint': 'Where visitors go once the link has expired or reached its visit limit, instead of an error page.',
    'links.protection.badge': 'Protected',
    'links.protection.has_password': 'Password',
  },
  de: {
    'links.protection.legend': 'Schutz',
    'links.protection.password': 'Passwort',
    'links.protection.password_hint': 'Besucher müssen es eingeben, bevor sie weitergeleitet werden (4–128 Zeichen). Es wird nie wieder angezeigt.',
    'links.protection.password_new': 'Neues Passwort',
    'links.protection.password_keep_hint': 'Dieser Link hat ein Passwort. Leer lassen, um es zu behalten.',
    'links.protection.remove_password': 'Passwort entfernen',
    'links.protection.fallback': 'Ausweich-URL',
    'links.protection.fallback_hint': 'Wohin Besucher gelangen, wenn der Link abgelaufen ist oder sein Besuchslimit erreicht hat, statt auf eine Fehlerseite.',
    'links.protection.badge': 'Geschützt',
    'links.protection.has_password': 'Passwort',
  },
  fr: {
    'links.protection.legend': 'Protection',
    'links.protection.password': 'Mot de passe',
    'links.protection.password_hint': 'Les visiteurs doivent le saisir avant d’être redirigés (4 à 128 caractères). Il n’est plus jamais affiché.',
    'links.protection.password_new': 'Nouveau mot de passe',
    'links.protection.password_keep_hint': 'Ce lien a un mot de passe. Laissez vide pour le conserver.',
    'links.protection.remove_password': 'Supprimer le mot de passe',
    'links.protection.fallback': 'URL de repli',
    'links.protection.fallback_hint': 'Où vont les visiteurs une fois le lien expiré ou sa limite de visites atteinte, au lieu d’une page d’erreur.',
    'links.protection.badge': 'Protégé',
    'links.protection.has_password': 'Mot de passe',
  },
  es: {
    'links.protection.legend': 'Protección',
    'links.protection.password': 'Contraseña',
    'links.protection.password_hint': 'Los visitantes deben introducirla antes de ser redirigidos (de 4 a 128 caracteres). No se vuelve a mostrar.',
    'links.protection.password_new': 'Nueva contraseña',
    'links.protection.password_keep_hint': 'Este enlace tiene contraseña. Déjalo vacío para conservarla.',
    'links.protection.remove_password': 'Quitar la contraseña',
    'links.protection.fallback': 'URL alternativa',
    'links.protection.fallback_hint':
      'Adónde van los visitantes cuando el enlace ha caducado o alcanzado su límite de visitas, en lugar de una página de error.',
    'links.protection.badge': 'Protegido',
    'links.protection.has_password': 'Contraseña',
  },
});
