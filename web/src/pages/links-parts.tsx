// Pieces the links table and a link's page share: its state, tags, short URL with a copy button,
// the QR code with its downloads, and the modal dialogs (delete confirmation, QR).
import { useState } from 'preact/hooks';
import type { Schemas } from '../api/client.js';
import { useI18n, type UiKey } from '../app/i18n.js';
import { formatNumber } from '../app/format.js';
import { CopyButton, Modal, Sparkline } from '../app/ui.js';
import { normaliseColour, QR_DEFAULT_BG, QR_DEFAULT_FG, QR_MIN_CONTRAST, qrContrast, shownContrast } from '#shared/links/qr-colours.js';

export type Link = Schemas['Link'];

const STATE_KEYS: Record<Link['state'], UiKey> = {
  active: 'links.state.active',
  expired: 'links.state.expired',
  limit_reached: 'links.state.limit_reached',
  deleted: 'links.state.deleted',
};

export function LinkState({ state }: { state: Link['state'] }) {
  const { t } = useI18n();
  return <span class={`link-state link-state-${state}`}>{t(STATE_KEYS[state])}</span>;
}

/** The tags of a link, each a link to the table filtered by it. */
export function TagList({ tags }: { tags: string[] }) {
  const { t } = useI18n();
  if (tags.length === 0) return <span class="muted">—</span>;
  return (
    <ul class="tag-list">
      {tags.map((tag) => (
        <li key={tag}>
          <a class="tag" href={`/links?tag=${encodeURIComponent(tag)}`} title={t('links.filter_by_tag', { tag })}>
            {tag}
          </a>
        </li>
      ))}
    </ul>
  );
}

/**
 * A link's clicks (`include=clicks`): the total, a link to its statistics, and the last 7 days as a
 * sparkline whose label reads the days out. Nothing when the answer has no counts.
 */
export function LinkClicks({ link, width = 56 }: { link: Link; width?: number }) {
  const { t, locale } = useI18n();
  const clicks = link.clicks;
  if (!clicks) return <span class="muted">—</span>;
  const days = clicks.daily.map((day) => `${day.date}: ${formatNumber(locale, day.visits)}`).join(', ');
  return (
    <span class="link-clicks">
      <a href={`/stats/link/${encodeURIComponent(link.id)}`} class="link-clicks-total">
        {formatNumber(locale, clicks.total)}
        <span class="visually-hidden">
          {' '}
          {t('links.col.clicks')}, {link.slug}
        </span>
      </a>
      <Sparkline
        values={clicks.daily.map((day) => day.visits)}
        label={t('links.clicks_label', { total: formatNumber(locale, clicks.total), days })}
        width={width}
        height={20}
      />
    </span>
  );
}

/** The short URL (without its scheme; a long host breaks before the slug) and its copy button. */
export function ShortUrl({ link }: { link: Link }) {
  const shown = link.short_url.replace(/^https?:\/\//, '');
  const cut = shown.lastIndexOf('/');
  return (
    <span class="short-url">
      <a href={link.short_url} class="mono" target="_blank" rel="noopener noreferrer">
        {shown.slice(0, cut)}
        <wbr />
        {shown.slice(cut)}
      </a>
      <CopyButton text={link.short_url} label={link.short_url} />
    </span>
  );
}

/** The QR image's address: same origin, so the session cookie authorises the browser's own GET. */
/** A QR image's colours, `rrggbb`; black on white adds nothing to the address. */
export type QrColours = { fg: string; bg: string };
const PLAIN: QrColours = { fg: QR_DEFAULT_FG, bg: QR_DEFAULT_BG };

export function qrUrl(link: Link, format: 'svg' | 'png', size = 256, colours: QrColours = PLAIN, logo = false): string {
  const coloured = colours.fg === QR_DEFAULT_FG && colours.bg === QR_DEFAULT_BG ? '' : `&fg=${colours.fg}&bg=${colours.bg}`;
  return `/api/v1/links/${encodeURIComponent(link.id)}/qr?format=${format}&size=${size}${coloured}${logo ? '&logo=true' : ''}`;
}

/**
 * The QR code of a link's short URL and its downloads, streamed by the browser (`<a download>`), in
 * the colours chosen here. A pair the API would refuse (too little contrast, or light modules on dark)
 * is said at once, and the image and downloads keep the last pair that scans.
 */
export function QrCode({ link }: { link: Link }) {
  const { t } = useI18n();
  const [chosen, setChosen] = useState<QrColours>(PLAIN);
  const [shown, setShown] = useState<QrColours>(PLAIN);
  // The subdomain's logo in the centre (issue 40): a subdomain without one answers 422, said here.
  const [logo, setLogo] = useState(false);
  const [logoMissing, setLogoMissing] = useState(false);
  const contrast = qrContrast(chosen.fg, chosen.bg);
  const choose = (part: keyof QrColours, value: string) => {
    const next = { ...chosen, [part]: normaliseColour(value) };
    setChosen(next);
    if (qrContrast(next.fg, next.bg) >= QR_MIN_CONTRAST) setShown(next);
  };
  const id = `qr-${link.id}`;
  return (
    <div class="qr">
      <img
        src={qrUrl(link, 'svg', 256, shown, logo && !logoMissing)}
        width={200}
        height={200}
        alt={t('links.qr_alt', { url: link.short_url })}
        onError={() => {
          if (logo) setLogoMissing(true);
        }}
      />
      <div class="checkbox">
        <input
          id={`qr-${link.id}-logo`}
          type="checkbox"
          checked={logo}
          onChange={(event) => {
            setLogo(event.currentTarget.checked);
            setLogoMissing(false);
          }}
        />
        <label for={`qr-${link.id}-logo`}>{t('qr_logo.in_code')}</label>
      </div>
      {logo && logoMissing ? (
        <p class="notice notice-info" role="status">
          {t('qr_logo.missing')} <a href={`/subdomains/${encodeURIComponent(link.subdomain)}`}>{link.subdomain}</a>
        </p>
      ) : null}
      <div class="qr-colours">
        <div class="field">
          <label for={`${id}-fg`}>{t('links.qr_fg')}</label>
          <input id={`${id}-fg`} type="color" value={`#${chosen.fg}`} onInput={(event) => choose('fg', event.currentTarget.value)} />
        </div>
        <div class="field">
          <label for={`${id}-bg`}>{t('links.qr_bg')}</label>
          <input id={`${id}-bg`} type="color" value={`#${chosen.bg}`} onInput={(event) => choose('bg', event.currentTarget.value)} />
        </div>
      </div>
      {contrast < QR_MIN_CONTRAST ? (
        <p class="notice notice-error" role="alert">
          {t('links.qr_low_contrast', { ratio: shownContrast(contrast), min: QR_MIN_CONTRAST })}
        </p>
      ) : null}
      <div class="form-actions">
        <a class="button button-small" href={qrUrl(link, 'svg', 1024, shown, logo && !logoMissing)} download={`${link.slug}.svg`}>
          {t('links.qr_download_svg')}
        </a>
        <a class="button button-small" href={qrUrl(link, 'png', 1024, shown, logo && !logoMissing)} download={`${link.slug}.png`}>
          {t('links.qr_download_png')}
        </a>
      </div>
    </div>
  );
}

/** Asks before a link is deleted; the action's error stays in the dialog. */
export function DeleteDialog({
  link,
  busy,
  error,
  onCancel,
  onConfirm,
}: {
  link: Link | undefined;
  busy: boolean;
  error?: string;
  onCancel: () => void;
  onConfirm: () => void;
}) {
  const { t } = useI18n();
  return (
    <Modal open={link !== undefined} onClose={onCancel} labelledBy="link-delete-title">
      {link ? (
        <>
          <h2 id="link-delete-title">{t('links.delete_title')}</h2>
          <p>{t('action.confirm_delete', { name: link.short_url })}</p>
          <p class="muted">{t('links.delete_hint')}</p>
          {error ? (
            <p class="notice notice-error" role="alert">
              {error}
            </p>
          ) : null}
          <div class="form-actions">
            <button type="button" class="button-danger" onClick={onConfirm} disabled={busy}>
              {busy ? t('links.deleting') : t('action.delete')}
            </button>
            <button type="button" onClick={onCancel} autoFocus>
              {t('action.cancel')}
            </button>
          </div>
        </>
      ) : null}
    </Modal>
  );
}

export function QrDialog({ link, onClose }: { link: Link | undefined; onClose: () => void }) {
  const { t } = useI18n();
  return (
    <Modal open={link !== undefined} onClose={onClose} labelledBy="link-qr-title">
      {link ? (
        <>
          <h2 id="link-qr-title">{t('links.qr_title', { slug: link.slug })}</h2>
          <QrCode link={link} />
          <div class="form-actions">
            <button type="button" onClick={onClose}>
              {t('action.close')}
            </button>
          </div>
        </>
      ) : null}
    </Modal>
  );
}
