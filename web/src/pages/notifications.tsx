// Notifications: what the platform told the account (a webhook disabled, …), newest first with
// cursor paging (GET /api/v1/notifications), the unread ones marked; mark one read, or all of them
// (POST /api/v1/notifications/read-all: every unread one, not only those of the loaded page, since
// the shell's badge counts them all).
import { useState } from 'preact/hooks';
import { api, call, load, type Schemas } from '../api/client.js';
import { formatDateTime, formatNumber } from '../app/format.js';
import { useI18n } from '../app/i18n.js';
import { Async, Empty, MetaPager, Notice, PageHeader, useCursorPages, useLoad } from '../app/ui.js';
import './notifications.css';

type Notification = Schemas['Notification'];
const PAGE_SIZE = 20;

/**
 * Told after notifications were marked read here, so that a listener (the shell's unread badge)
 * can count again at once instead of at its next poll or navigation.
 */
export const NOTIFICATIONS_CHANGED = 'linktrack:notifications-changed';
const announceChange = () => window.dispatchEvent(new Event(NOTIFICATIONS_CHANGED));

const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

/** A notification's words: a kind the dashboard knows in the viewer's language, any other as the API wrote it. */
function NotificationText({ notification }: { notification: Notification }) {
  const { t } = useI18n();
  const url = text(notification.data.url);
  const reason = text(notification.data.reason);
  const webhookId = text(notification.data.webhook_id);
  if (notification.kind === 'webhook.disabled' && url) {
    return (
      <>
        <h2 class="notification-title" id={`notification-${notification.id}`}>
          {t('notifications.webhook_disabled')}
        </h2>
        <p class="notification-body">
          {reason ? t('notifications.webhook_disabled_body', { url, reason }) : t('notifications.webhook_disabled_body_plain', { url })}
        </p>
        {webhookId ? <a href={`/webhooks/${encodeURIComponent(webhookId)}`}>{t('notifications.open_webhook')}</a> : null}
      </>
    );
  }
  return (
    <>
      <h2 class="notification-title" id={`notification-${notification.id}`}>
        {notification.title}
      </h2>
      <p class="notification-body">{notification.body}</p>
    </>
  );
}

export function NotificationsPage() {
  const { t, locale } = useI18n();
  const [unreadOnly, setUnreadOnly] = useState(false);
  const pages = useCursorPages();
  const { cursor } = pages;
  const loaded = useLoad(
    (signal) =>
      call(
        api.GET('/api/v1/notifications', {
          params: { query: { limit: PAGE_SIZE, ...(unreadOnly ? { unread: 'true' as const } : {}), ...(cursor ? { cursor } : {}) } },
          signal,
        }),
      ),
    [unreadOnly, cursor],
  );
  const [busy, setBusy] = useState<string>();
  const [error, setError] = useState<string>();
  const [done, setDone] = useState<string>();

  const filter = (only: boolean) => {
    setUnreadOnly(only);
    pages.reset();
  };
  const act = async (key: string, action: () => Promise<void>) => {
    setBusy(key);
    setError(undefined);
    setDone(undefined);
    try {
      await action();
      announceChange();
      loaded.reload();
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : String(caught));
    } finally {
      setBusy(undefined);
    }
  };
  const markRead = (id: string) => act(id, async () => void (await load(api.POST('/api/v1/notifications/{id}/read', { params: { path: { id } } }))));
  const markAll = () =>
    act('all', async () => {
      const { marked } = await load(api.POST('/api/v1/notifications/read-all'));
      setDone(t('notifications.marked_all', { count: formatNumber(locale, marked) }));
      // Read ones leave the unread filter: its first page is where the rest starts.
      pages.reset();
    });

  const unread = loaded.state === 'ready' && typeof loaded.data.meta.unread === 'number' ? loaded.data.meta.unread : undefined;
  return (
    <>
      <PageHeader title={t('notifications.title')}>
        {unread !== undefined ? (
          <span class="unread-count" role="status">
            {t('notifications.unread_count', { count: formatNumber(locale, unread) })}
          </span>
        ) : null}
        <button type="button" onClick={markAll} disabled={busy !== undefined || !unread}>
          {busy === 'all' ? t('notifications.marking') : t('notifications.mark_all')}
        </button>
      </PageHeader>
      <div class="filters">
        <div class="segmented" role="group" aria-label={t('notifications.filter')}>
          <button type="button" aria-pressed={!unreadOnly} onClick={() => filter(false)}>
            {t('notifications.all')}
          </button>
          <button type="button" aria-pressed={unreadOnly} onClick={() => filter(true)}>
            {t('notifications.unread_only')}
          </button>
        </div>
      </div>
      {error ? <Notice kind="error">{error}</Notice> : null}
      {done ? <Notice kind="ok">{done}</Notice> : null}
      <Async loaded={loaded}>
        {({ data, meta }) =>
          data.notifications.length === 0 ? (
            <Empty>
              <p>{unreadOnly ? t('notifications.empty_unread') : t('notifications.empty')}</p>
            </Empty>
          ) : (
            <>
              <ul class="notifications">
                {data.notifications.map((notification) => (
                  <li key={notification.id} class={`card notification${notification.read_at ? '' : ' notification-unread'}`}>
                    <div class="notification-meta">
                      {notification.read_at ? null : <span class="unread-mark">{t('notifications.unread')}</span>}
                      <time dateTime={notification.created_at}>{formatDateTime(locale, notification.created_at)}</time>
                      {notification.emailed_at ? <span class="muted">{t('notifications.emailed')}</span> : null}
                    </div>
                    <NotificationText notification={notification} />
                    {notification.read_at ? null : (
                      <div class="form-actions">
                        <button
                          type="button"
                          class="button-small"
                          onClick={() => markRead(notification.id)}
                          disabled={busy !== undefined}
                          aria-describedby={`notification-${notification.id}`}
                        >
                          {busy === notification.id ? t('notifications.marking') : t('notifications.mark_read')}
                        </button>
                      </div>
                    )}
                  </li>
                ))}
              </ul>
              <MetaPager pages={pages} meta={meta} />
            </>
          )
        }
      </Async>
    </>
  );
}
