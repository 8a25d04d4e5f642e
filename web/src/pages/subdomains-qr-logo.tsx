// A subdomain's QR-code logo on its settings page (issue 40 item 8): the current one, an upload
// (read as a data URL and sent as JSON to PUT /api/v1/subdomains/{name}/qr-logo, where it is
// checked and normalised), and its removal.
import { useRef, useState } from 'preact/hooks';
import { api, ApiError, load } from '../api/client.js';
import { useI18n } from '../app/i18n.js';
import { Empty, ErrorState, Field, fieldError, Loading, Notice, useLoad } from '../app/ui.js';

/** Largest file the API takes (LOGO_MAX_BYTES): a larger one is refused here before it is read. */
const MAX_BYTES = 256 * 1024;

/** Whether the subdomain has a logo: its digest, or null (404); another failure is the load's error. */
async function logoDigest(name: string, signal: AbortSignal): Promise<string | null> {
  const response = await fetch(`/api/v1/subdomains/${encodeURIComponent(name)}/qr-logo`, { method: 'GET', credentials: 'same-origin', signal });
  if (response.status === 404) return null;
  if (!response.ok) {
    const body = (await response.json().catch(() => undefined)) as { error?: { code: string; message: string } } | undefined;
    throw new ApiError(response.status, body?.error);
  }
  return response.headers.get('etag')?.replaceAll('"', '') ?? 'current';
}

const readAsDataUrl = (file: File) =>
  new Promise<string>((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(reader.error ?? new Error('the file could not be read'));
    reader.readAsDataURL(file);
  });

export function SubdomainQrLogo({ name }: { name: string }) {
  const { t } = useI18n();
  const loaded = useLoad((signal) => logoDigest(name, signal), [name]);
  const [busy, setBusy] = useState<'upload' | 'remove'>();
  const [error, setError] = useState<unknown>();
  const [notice, setNotice] = useState<string>();
  const input = useRef<HTMLInputElement>(null);
  const id = 'qr-logo-file';
  const onField =
    error instanceof Error && !(error instanceof ApiError)
      ? error.message
      : (fieldError(error, 'image') ?? (error instanceof ApiError && error.code === 'payload_too_large' ? t('qr_logo.too_large') : undefined));

  const upload = async (event: Event) => {
    event.preventDefault();
    const file = input.current?.files?.[0];
    if (!file || busy) return;
    setError(undefined);
    setNotice(undefined);
    if (file.size > MAX_BYTES) {
      setError(new Error(t('qr_logo.too_large')));
      return;
    }
    setBusy('upload');
    try {
      const image = await readAsDataUrl(file);
      const saved = await load(api.PUT('/api/v1/subdomains/{name}/qr-logo', { params: { path: { name } }, body: { image } }));
      setNotice(t('qr_logo.saved', { width: saved.width, height: saved.height }));
      if (input.current) input.current.value = '';
      loaded.reload();
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(undefined);
    }
  };
  const remove = async () => {
    setBusy('remove');
    setError(undefined);
    setNotice(undefined);
    try {
      await load(api.DELETE('/api/v1/subdomains/{name}/qr-logo', { params: { path: { name } } }));
      setNotice(t('qr_logo.removed'));
      loaded.reload();
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(undefined);
    }
  };

  return (
    <section class="card qr-logo" aria-labelledby="qr-logo-heading">
      <h2 id="qr-logo-heading">{t('qr_logo.heading')}</h2>
      <p class="muted">{t('qr_logo.intro')}</p>
      {loaded.state === 'loading' ? <Loading /> : null}
      {loaded.state === 'error' ? <ErrorState error={loaded.error} retry={loaded.reload} /> : null}
      {loaded.state === 'ready' ? (
        <>
          {loaded.data === null ? (
            <Empty>
              <p>{t('qr_logo.none')}</p>
            </Empty>
          ) : (
            <div class="qr-logo-current">
              <img
                src={`/api/v1/subdomains/${encodeURIComponent(name)}/qr-logo?v=${encodeURIComponent(loaded.data)}`}
                alt={t('qr_logo.current')}
                width={96}
                height={96}
              />
              <button type="button" class="button-danger" disabled={busy !== undefined} onClick={() => void remove()}>
                {t('qr_logo.remove')}
              </button>
            </div>
          )}
          <form class="qr-logo-upload" onSubmit={upload}>
            <Field id={id} label={t('qr_logo.file')} error={onField}>
              <input
                id={id}
                ref={input}
                type="file"
                accept="image/png,image/jpeg"
                aria-invalid={onField ? 'true' : undefined}
                aria-describedby={onField ? `${id}-error` : undefined}
              />
            </Field>
            <button type="submit" class="button-primary" disabled={busy !== undefined}>
              {busy === 'upload' ? t('qr_logo.uploading') : t('qr_logo.upload')}
            </button>
          </form>
          {notice ? <Notice kind="ok">{notice}</Notice> : null}
          {error !== undefined && !onField ? <Notice kind="error">{error instanceof Error ? error.message : String(error)}</Notice> : null}
        </>
      ) : null}
    </section>
  );
}
