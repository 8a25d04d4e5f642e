// The dashboard's building blocks: the states every page has (loading, empty, error, forbidden),
// data loading with those states, and small widgets (copy button, pager, bars, sparkline).
// Everything a user typed is rendered as text by Preact (never as HTML): no dangerouslySetInnerHTML.
import type { ComponentChildren, JSX, TargetedEvent } from 'preact';
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from '../api/client.js';
import { useI18n } from './i18n.js';

/** What a load is: in progress, done with data, or failed. */
export type Loaded<T> = { state: 'loading' } | { state: 'ready'; data: T } | { state: 'error'; error: ApiError | Error };

/**
 * Loads data for a page and keeps its state; reloads when `deps` change or `reload()` is called.
 * A newer load supersedes an older one (its result is ignored), so fast filter changes never show
 * stale rows.
 */
export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[]): Loaded<T> & { reload: () => void } {
  const [loaded, setLoaded] = useState<Loaded<T>>({ state: 'loading' });
  const [round, setRound] = useState(0);
  useEffect(() => {
    const controller = new AbortController();
    setLoaded((previous) => (previous.state === 'ready' ? previous : { state: 'loading' }));
    load(controller.signal).then(
      (data) => {
        if (!controller.signal.aborted) setLoaded({ state: 'ready', data });
      },
      (error: unknown) => {
        if (controller.signal.aborted) return;
        setLoaded({ state: 'error', error: error instanceof Error ? error : new Error(String(error)) });
      },
    );
    return () => controller.abort();
    // Not exhaustive on purpose: the caller's deps say when to load again.
  }, [...deps, round]);
  const reload = useCallback(() => setRound((value) => value + 1), []);
  return { ...loaded, reload };
}

export function Loading({ label }: { label?: string }) {
  const { t } = useI18n();
  return (
    <p class="state state-loading" role="status" aria-live="polite">
      <span class="spinner" aria-hidden="true" />
      {label ?? t('state.loading')}
    </p>
  );
}

export function Empty({ children }: { children?: ComponentChildren }) {
  const { t } = useI18n();
  return <div class="state state-empty">{children ?? <p>{t('state.empty')}</p>}</div>;
}

/** A failed load or action: forbidden (403) has its own wording; others show the API's message and request id. */
export function ErrorState({ error, retry }: { error: Error; retry?: () => void }) {
  const { t } = useI18n();
  const api = error instanceof ApiError ? error : undefined;
  if (api && api.status === 403) {
    return (
      <div class="state state-forbidden" role="alert">
        <h2>{t('state.forbidden')}</h2>
        <p>{api.message}</p>
        <p class="muted">{t('state.forbidden_hint')}</p>
      </div>
    );
  }
  return (
    <div class="state state-error" role="alert">
      <h2>{t('state.error')}</h2>
      <p>{error.message}</p>
      {api?.requestId ? <p class="muted">{t('state.request_id', { id: api.requestId })}</p> : null}
      {retry ? (
        <button type="button" onClick={retry}>
          {t('state.retry')}
        </button>
      ) : null}
    </div>
  );
}

/** Renders a load's state: a spinner, the error, or the children with the data. */
export function Async<T>({ loaded, children }: { loaded: Loaded<T> & { reload?: () => void }; children: (data: T) => ComponentChildren }) {
  if (loaded.state === 'loading') return <Loading />;
  if (loaded.state === 'error') return <ErrorState error={loaded.error} retry={loaded.reload} />;
  return <>{children(loaded.data)}</>;
}

/** Whether a page was shown already: the first page of a load keeps the browser's focus (the skip link comes first). */
let pageShown = false;

/** A page's heading (focused after an in-app navigation, so screen readers announce the new page) and actions. */
export function PageHeader({ title, children }: { title: string; children?: ComponentChildren }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} · linktrack`;
  }, [title]);
  useEffect(() => {
    if (pageShown) heading.current?.focus({ preventScroll: true });
    pageShown = true;
  }, []);
  return (
    <header class="page-header">
      <h1 tabIndex={-1} ref={heading}>
        {title}
      </h1>
      {children ? <div class="page-actions">{children}</div> : null}
    </header>
  );
}

/** An inline message after an action: success or the API's error. */
export function Notice({ kind, children }: { kind: 'ok' | 'error' | 'info'; children: ComponentChildren }) {
  return (
    <p class={`notice notice-${kind}`} role={kind === 'error' ? 'alert' : 'status'}>
      {children}
    </p>
  );
}

/** Copies a text to the clipboard and says so. */
export function CopyButton({ text, label }: { text: string; label?: string }) {
  const { t } = useI18n();
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      // Clipboard refused (insecure origin, permissions): select-and-copy through a hidden field.
      const area = document.createElement('textarea');
      area.value = text;
      area.setAttribute('readonly', '');
      area.className = 'visually-hidden';
      document.body.append(area);
      area.select();
      // eslint-disable-next-line @typescript-eslint/no-deprecated -- the fallback where the Clipboard API is refused
      document.execCommand('copy');
      area.remove();
    }
    setCopied(true);
    setTimeout(() => setCopied(false), 1500);
  };
  return (
    <button type="button" class="button-small" onClick={copy} aria-label={label ? `${copied ? t('action.copied') : t('action.copy')}: ${label}` : undefined}>
      {copied ? t('action.copied') : t('action.copy')}
    </button>
  );
}

/** Paging buttons: previous and next (a cursor-paged list uses MetaPager with useCursorPages). */
export function CursorPager({
  hasPrevious,
  hasNext,
  onPrevious,
  onNext,
  total,
}: {
  hasPrevious: boolean;
  hasNext: boolean;
  onPrevious: () => void;
  onNext: () => void;
  total?: number;
}) {
  const { t, locale } = useI18n();
  return (
    <nav class="pager" aria-label={t('table.pagination')}>
      {total !== undefined ? <span class="muted">{t('table.total', { count: new Intl.NumberFormat(locale).format(total) })}</span> : null}
      <button type="button" onClick={onPrevious} disabled={!hasPrevious}>
        {t('action.previous')}
      </button>
      <button type="button" onClick={onNext} disabled={!hasNext}>
        {t('action.next')}
      </button>
    </nav>
  );
}

/** The envelope `meta` of a cursor-paged list, as far as paging reads it. */
export type PageMeta = { total?: unknown; next_cursor?: unknown };

/** Where a cursor-paged list stands: the cursor of the page shown (none for the first) and the moves. */
export interface CursorPages {
  cursor: string | undefined;
  hasPrevious: boolean;
  previous: () => void;
  next: (cursor: string) => void;
  /** Back to the first page. */
  reset: () => void;
}

/**
 * A stack of the cursors walked to (the API's cursors only lead forward, so Previous pops one),
 * back to the first page whenever one of `resetOn` changes.
 */
export function useCursorPages(resetOn: readonly unknown[] = []): CursorPages {
  const [cursors, setCursors] = useState<string[]>([]);
  // The same (empty) stack when already on the first page: nothing re-renders or reloads.
  const reset = useCallback(() => setCursors((stack) => (stack.length === 0 ? stack : [])), []);
  useEffect(reset, resetOn);
  return {
    cursor: cursors.at(-1),
    hasPrevious: cursors.length > 0,
    previous: () => setCursors((stack) => stack.slice(0, -1)),
    next: (cursor) => setCursors((stack) => [...stack, cursor]),
    reset,
  };
}

/** The CursorPager of a cursor-paged list, fed from its page's `meta`; `total` overrides the meta's. */
export function MetaPager({ pages, meta, total }: { pages: CursorPages; meta: PageMeta; total?: number }) {
  // The API's has_more is exactly "next_cursor is not null".
  const nextCursor = typeof meta.next_cursor === 'string' && meta.next_cursor !== '' ? meta.next_cursor : undefined;
  return (
    <CursorPager
      total={total ?? (typeof meta.total === 'number' ? meta.total : undefined)}
      hasPrevious={pages.hasPrevious}
      hasNext={nextCursor !== undefined}
      onPrevious={pages.previous}
      onNext={() => nextCursor !== undefined && pages.next(nextCursor)}
    />
  );
}

/**
 * A modal `<dialog>` (showModal traps the focus, Escape closes it) open while `open`: the props to
 * spread on the `<dialog>`. The state is what opens and closes it; `onClose` is called when the
 * browser closes it (Escape, a form of method "dialog") and must always clear that state (the
 * element only follows changes of `open`), and a button that closes it calls `onClose` itself,
 * never the element's close().
 *
 * Escape fires `cancel` at once, but `close` only with a later animation frame, and a browser handles
 * key presses first: an Escape and at once Enter on the button that opened the dialog came before
 * it. So the state follows `cancel`; the element follows the state in a layout effect (within the
 * render, not after the paint); and a `close` that comes once the dialog is open again, or once the
 * state has already closed it, is stale and ignored. Otherwise the Enter set the state that was
 * still set and the dialog stayed shut, or the late `close` shut the dialog it had just opened.
 */
export function useModalDialog(open: boolean, onClose: () => void) {
  const ref = useRef<HTMLDialogElement>(null);
  const isOpen = useRef(open);
  isOpen.current = open;
  useLayoutEffect(() => {
    const element = ref.current;
    if (!element) return;
    if (open && !element.open) element.showModal();
    if (!open && element.open) element.close();
  }, [open]);
  return {
    ref,
    // A `cancel` bubbling from within (a file input's picker dismissed) is not the dialog's.
    onCancel: (event: TargetedEvent<HTMLDialogElement>) => event.target === event.currentTarget && onClose(),
    onClose: (event: TargetedEvent<HTMLDialogElement>) => !event.currentTarget.open && isOpen.current && onClose(),
  };
}

/** A modal `<dialog>` showing `children` while `open`, and `onClose` when the browser or a button closes it. */
export function Modal({ open, onClose, labelledBy, children }: { open: boolean; onClose: () => void; labelledBy: string; children: ComponentChildren }) {
  const dialog = useModalDialog(open, onClose);
  return (
    <dialog {...dialog} aria-labelledby={labelledBy}>
      {open ? children : null}
    </dialog>
  );
}

/** A table of values with proportional bars (top countries, browsers, …). */
export function BarTable({
  caption,
  rows,
  valueLabel,
  nameLabel,
}: {
  caption: string;
  nameLabel: string;
  valueLabel: string;
  /** `href`: the row's name is a link there (a statistics breakdown's row filters the report by its value). */
  rows: { name: string; value: number; href?: string; hint?: string }[];
}) {
  const { locale, t } = useI18n();
  const max = Math.max(1, ...rows.map((row) => row.value));
  return (
    <table class="bars">
      <caption>{caption}</caption>
      <thead>
        <tr>
          <th scope="col">{nameLabel}</th>
          <th scope="col" class="num">
            {valueLabel}
          </th>
        </tr>
      </thead>
      <tbody>
        {rows.length === 0 ? (
          <tr>
            <td colSpan={2} class="muted">
              {t('state.empty')}
            </td>
          </tr>
        ) : (
          rows.map((row) => (
            <tr key={row.name}>
              <td>
                <span class="bar" style={{ width: `${Math.max(1, (row.value / max) * 100)}%` }} aria-hidden="true" />
                <span class="bar-label">
                  {row.href ? (
                    <a href={row.href} title={row.hint}>
                      {row.name}
                      {row.hint ? <span class="visually-hidden"> ({row.hint})</span> : null}
                    </a>
                  ) : (
                    row.name
                  )}
                </span>
              </td>
              <td class="num">{new Intl.NumberFormat(locale).format(row.value)}</td>
            </tr>
          ))
        )}
      </tbody>
    </table>
  );
}

/** A small trend line as SVG (no chart library for a sparkline). */
export function Sparkline({ values, label, width = 160, height = 36 }: { values: number[]; label: string; width?: number; height?: number }) {
  const max = Math.max(1, ...values);
  const step = values.length > 1 ? width / (values.length - 1) : width;
  const points = values.map((value, index) => `${(index * step).toFixed(1)},${(height - 2 - (value / max) * (height - 4)).toFixed(1)}`).join(' ');
  return (
    <svg class="sparkline" width={width} height={height} viewBox={`0 0 ${width} ${height}`} role="img" aria-label={label}>
      <polyline points={points} fill="none" stroke="currentColor" stroke-width="2" stroke-linejoin="round" />
    </svg>
  );
}

/** A labelled form field: the label, the control, and the field's error from a validation_error. */
export function Field({ label, hint, error, children, id }: { label: string; hint?: string; error?: string; id: string; children: JSX.Element }) {
  return (
    <div class={`field${error ? ' field-invalid' : ''}`}>
      <label for={id}>{label}</label>
      {children}
      {hint ? (
        <small class="hint" id={`${id}-hint`}>
          {hint}
        </small>
      ) : null}
      {error ? (
        <small class="field-error" id={`${id}-error`} role="alert">
          {error}
        </small>
      ) : null}
    </div>
  );
}

/**
 * The current password, as every change of a credential asks for it (the account's password, two-factor
 * set-up and changes): a Field whose input the browser fills with the saved password, described by
 * its hint and its error.
 */
export function CurrentPasswordField({
  id,
  label,
  hint,
  error,
  value,
  onValue,
}: {
  id: string;
  label: string;
  hint?: string;
  error?: string;
  value: string;
  onValue: (value: string) => void;
}) {
  const describedBy = [hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ');
  return (
    <Field id={id} label={label} hint={hint} error={error}>
      <input
        id={id}
        type="password"
        autocomplete="current-password"
        required
        value={value}
        onInput={(event) => onValue(event.currentTarget.value)}
        aria-invalid={error ? true : undefined}
        aria-describedby={describedBy || undefined}
      />
    </Field>
  );
}

/** The message of a field in a validation_error's details (details map field to rule). */
export function fieldError(error: unknown, field: string): string | undefined {
  if (!(error instanceof ApiError) || error.code !== 'validation_error') return undefined;
  const rule = error.details[field];
  return typeof rule === 'string' ? rule : undefined;
}
