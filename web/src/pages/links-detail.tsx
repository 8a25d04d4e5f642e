// One link (`/links/:id`): its details, QR code with downloads, the edit form, clone and delete.
import { useLocation } from 'preact-iso';
import { useState } from 'preact/hooks';
import { api, call, load } from '../api/client.js';
import { formatDateTime, formatNumber } from '../app/format.js';
import { useI18n } from '../app/i18n.js';
import { Async, Notice, PageHeader, useLoad } from '../app/ui.js';
import { EditLinkForm } from './links-form.js';
import { DeleteDialog, LinkClicks, LinkState, QrCode, ShortUrl, TagList, type Link } from './links-parts.js';
import { ProtectedBadge } from './links-protection.js';

export function LinkDetail({ id }: { id: string }) {
  const { t } = useI18n();
  const loaded = useLoad((signal) => load(api.GET('/api/v1/links/{id}', { params: { path: { id }, query: { include: 'clicks' } }, signal })), [id]);
  const [saved, setSaved] = useState<Link>();
  // The saved answer replaces the loaded link until the id changes; it has no counts, so the loaded ones stay.
  const clicks = loaded.state === 'ready' ? loaded.data.clicks : undefined;
  const link = saved?.id === id ? { ...saved, clicks } : loaded.state === 'ready' ? loaded.data : undefined;
  const title = link ? (link.title ?? link.slug) : t('links.link');
  return (
    <>
      <PageHeader title={title}>
        <a class="button" href="/links">
          {t('links.back')}
        </a>
      </PageHeader>
      <Async loaded={loaded}>{() => (link ? <LinkView key={link.id} link={link} onSaved={setSaved} /> : null)}</Async>
    </>
  );
}

function LinkView({ link, onSaved }: { link: Link; onSaved: (link: Link) => void }) {
  const { t, locale } = useI18n();
  const { route } = useLocation();
  const [outcome, setOutcome] = useState<{ kind: 'cloned'; link: Link } | { kind: 'error'; message: string }>();
  const [cloning, setCloning] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const [deleteBusy, setDeleteBusy] = useState(false);
  const [deleteError, setDeleteError] = useState<string>();

  const clone = async () => {
    if (cloning) return;
    setCloning(true);
    setOutcome(undefined);
    try {
      const { data } = await call(api.POST('/api/v1/links/{id}/duplicate', { params: { path: { id: link.id } } }));
      setOutcome({ kind: 'cloned', link: data });
    } catch (caught) {
      setOutcome({ kind: 'error', message: caught instanceof Error ? caught.message : String(caught) });
    } finally {
      setCloning(false);
    }
  };

  const remove = async () => {
    if (deleteBusy) return;
    setDeleteBusy(true);
    setDeleteError(undefined);
    try {
      await call(api.DELETE('/api/v1/links/{id}', { params: { path: { id: link.id } } }));
      route('/links');
    } catch (caught) {
      setDeleteError(caught instanceof Error ? caught.message : String(caught));
      setDeleteBusy(false);
    }
  };

  return (
    <>
      <div class="page-actions link-actions">
        <button type="button" onClick={() => void clone()} disabled={cloning}>
          {cloning ? t('links.cloning') : t('links.clone')}
        </button>
        <a class="button" href={`/stats/link/${encodeURIComponent(link.id)}`}>
          {t('links.stats')}
        </a>
        <button
          type="button"
          class="button-danger"
          onClick={() => {
            setDeleteError(undefined);
            setConfirming(true);
          }}
        >
          {t('action.delete')}
        </button>
      </div>
      {outcome?.kind === 'cloned' ? (
        <Notice kind="ok">
          {t('links.cloned', { url: outcome.link.short_url })} <a href={`/links/${encodeURIComponent(outcome.link.id)}`}>{t('links.open')}</a>
        </Notice>
      ) : null}
      {outcome?.kind === 'error' ? <Notice kind="error">{outcome.message}</Notice> : null}
      <div class="link-overview">
        <section class="card" aria-labelledby="link-details-title">
          <h2 id="link-details-title">{t('links.details')}</h2>
          <dl class="link-facts">
            <dt>{t('links.col.short_url')}</dt>
            <dd>
              <ShortUrl link={link} />
            </dd>
            <dt>{t('links.col.target')}</dt>
            <dd class="break">
              <a href={link.target_url} target="_blank" rel="noopener noreferrer">
                {link.target_url}
              </a>
            </dd>
            <dt>{t('links.col.title')}</dt>
            <dd class="break">{link.title ?? <span class="muted">—</span>}</dd>
            <dt>{t('links.col.state')}</dt>
            <dd>
              <LinkState state={link.state} /> <ProtectedBadge link={link} />
              {link.limit_reached_at ? (
                <span class="muted"> {t('links.limit_reached_at', { date: formatDateTime(locale, link.limit_reached_at) })}</span>
              ) : null}
            </dd>
            <dt>{t('links.col.tags')}</dt>
            <dd>
              <TagList tags={link.tags} />
            </dd>
            {link.clicks ? (
              <>
                <dt>{t('links.clicks_total')}</dt>
                <dd>
                  <LinkClicks link={link} width={120} />
                </dd>
                <dt>{t('links.clicks_week')}</dt>
                <dd>
                  {formatNumber(locale, link.clicks.last_7_days)} <small class="muted">{t('links.clicks_note')}</small>
                </dd>
              </>
            ) : null}
            <dt>{t('links.field.max_visits')}</dt>
            <dd>{link.max_visits === null ? t('links.unlimited') : formatNumber(locale, link.max_visits)}</dd>
            <dt>{t('links.field.expires')}</dt>
            <dd>{link.expires_at ? formatDateTime(locale, link.expires_at) : t('time.never')}</dd>
            <dt>{t('links.field.redirect')}</dt>
            <dd>{link.redirect_type}</dd>
            <dt>{t('links.append_visit_id_short')}</dt>
            <dd>{link.append_visit_id ? t('links.yes') : t('links.no')}</dd>
            <dt>{t('links.col.created')}</dt>
            <dd>{formatDateTime(locale, link.created_at)}</dd>
            <dt>{t('links.updated')}</dt>
            <dd>{formatDateTime(locale, link.updated_at)}</dd>
          </dl>
        </section>
        <section class="card" aria-labelledby="link-qr-section">
          <h2 id="link-qr-section">{t('links.qr_code')}</h2>
          <QrCode link={link} />
        </section>
      </div>
      <EditLinkForm link={link} onSaved={onSaved} />
      <DeleteDialog
        link={confirming ? link : undefined}
        busy={deleteBusy}
        error={deleteError}
        onCancel={() => setConfirming(false)}
        onConfirm={() => void remove()}
      />
    </>
  );
}
