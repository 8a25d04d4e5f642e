import { uiMessages } from './define.js';

/** The notifications page of the dashboard. */
export const notifications = uiMessages({
  en: {
    'notifications.title': 'Notifications',
    'notifications.filter': 'Show',
    'notifications.all': 'All',
    'notifications.unread_only': 'Unread only',
    'notifications.unread': 'Unread',
    'notifications.unread_count': '{count} unread',
    'notifications.mark_read': 'Mark read',
    'notifications.mark_all': 'Mark all read',
    'notifications.marking': 'Marking…',
    'notifications.marked_all': '{count} marked read.',
    'notifications.emailed': 'also sent by e-mail',
    'notifications.empty': 'No notifications. The platform tells you here when something needs you, such as a webhook it had to disable.',
    'notifications.empty_unread': 'Nothing unread.',
    'notifications.webhook_disabled': 'A webhook was disabled',
    'notifications.webhook_disabled_body':
      'Your webhook {url} was disabled: {reason}. Nothing is sent to it until you enable it again; its delivery log shows every attempt.',
    'notifications.webhook_disabled_body_plain':
      'Your webhook {url} was disabled. Nothing is sent to it until you enable it again; its delivery log shows every attempt.',
    'notifications.open_webhook': 'Open the webhook',
  },
  de: {
    'notifications.title': 'Benachrichtigungen',
    'notifications.filter': 'Anzeigen',
    'notifications.all': 'Alle',
    'notifications.unread_only': 'Nur ungelesene',
    'notifications.unread': 'Ungelesen',
    'notifications.unread_count': '{count} ungelesen',
    'notifications.mark_read': 'Als gelesen markieren',
    'notifications.mark_all': 'Alle als gelesen markieren',
    'notifications.marking': 'Wird markiert …',
    'notifications.marked_all': '{count} als gelesen markiert.',
    'notifications.emailed': 'auch per E-Mail gesendet',
    'notifications.empty': 'Keine Benachrichtigungen. Die Plattform meldet sich hier, wenn etwas Sie braucht, etwa ein Webhook, den sie deaktivieren musste.',
    'notifications.empty_unread': 'Nichts Ungelesenes.',
    'notifications.webhook_disabled': 'Ein Webhook wurde deaktiviert',
    'notifications.webhook_disabled_body':
      'Ihr Webhook {url} wurde deaktiviert: {reason}. Bis Sie ihn wieder aktivieren, wird nichts an ihn gesendet; sein Zustellprotokoll zeigt jeden Versuch.',
    'notifications.webhook_disabled_body_plain':
      'Ihr Webhook {url} wurde deaktiviert. Bis Sie ihn wieder aktivieren, wird nichts an ihn gesendet; sein Zustellprotokoll zeigt jeden Versuch.',
    'notifications.open_webhook': 'Webhook öffnen',
  },
  fr: {
    'notifications.title': 'Notifications',
    'notifications.filter': 'Afficher',
    'notifications.all': 'Toutes',
    'notifications.unread_only': 'Non lues seulement',
    'notifications.unread': 'Non lue',
    'notifications.unread_count': '{count} non lues',
    'notifications.mark_read': 'Marquer comme lue',
    'notifications.mark_all': 'Tout marquer comme lu',
    'notifications.marking': 'Marquage…',
    'notifications.marked_all': '{count} marquées comme lues.',
    'notifications.emailed': 'aussi envoyée par e-mail',
    'notifications.empty':
      'Aucune notification. La plateforme vous prévient ici quand quelque chose demande votre attention, par exemple un webhook qu’elle a dû désactiver.',
    'notifications.empty_unread': 'Rien de non lu.',
    'notifications.webhook_disabled': 'Un webhook a été désactivé',
    'notifications.webhook_disabled_body':
      'Votre webhook {url} a été désactivé : {reason}. Rien ne lui est envoyé tant que vous ne le réactivez pas ; son journal des livraisons montre chaque tentative.',
    'notifications.webhook_disabled_body_plain':
      'Votre webhook {url} a été désactivé. Rien ne lui est envoyé tant que vous ne le réactivez pas ; son journal des livraisons montre chaque tentative.',
    'notifications.open_webhook': 'Ouvrir le webhook',
  },
  es: {
    'notifications.title': 'Notificaciones',
    'notifications.filter': 'Mostrar',
    'notifications.all': 'Todas',
    'notifications.unread_only': 'Solo sin leer',
    'notifications.unread': 'Sin leer',
    'notifications.unread_count': '{count} sin leer',
    'notifications.mark_read': 'Marcar como leída',
    'notifications.mark_all': 'Marcar todas como leídas',
    'notifications.marking': 'Marcando…',
    'notifications.marked_all': '{count} marcadas como leídas.',
    'notifications.emailed': 'también enviada por correo',
    'notifications.empty': 'No hay notificaciones. La plataforma te avisa aquí cuando algo te necesita, por ejemplo un webhook que tuvo que desactivar.',
    'notifications.empty_unread': 'Nada sin leer.',
    'notifications.webhook_disabled': 'Se desactivó un webhook',
    'notifications.webhook_disabled_body':
      'Tu webhook {url} se desactivó: {reason}. No se le envía nada hasta que lo vuelvas a activar; su registro de entregas muestra cada intento.',
    'notifications.webhook_disabled_body_plain':
      'Tu webhook {url} se desactivó. No se le envía nada hasta que lo vuelvas a activar; su registro de entregas muestra cada intento.',
    'notifications.open_webhook': 'Abrir el webhook',
  },
});
