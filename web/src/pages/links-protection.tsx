// Issue 40, protected links in the link form: the password (write-only: the API never returns it,
// so the edit form offers a new one or its removal) and the expiry fallback URL.
import { useI18n } from '../app/i18n.js';
import { Field } from '../app/ui.js';
import type { Link } from './links-parts.js';

/** The protection inputs, as typed. */
export interface ProtectionDraft {
  password: string;
  remove_password: boolean;
  fallback_url: string;
}

export const emptyProtection = (): ProtectionDraft => ({ password: '', remove_password: false, fallback_url: '' });

export const protectionOf = (link: Link): ProtectionDraft => ({ password: '', remove_password: false, fallback_url: link.fallback_url ?? '' });

/** The create body's protection fields: only what was typed. */
export function protectionCreate(draft: ProtectionDraft, encode: (url: string) => string): { password?: string; fallback_url?: string } {
  return {
    ...(draft.password ? { password: draft.password } : {}),
    ...(draft.fallback_url.trim() ? { fallback_url: encode(draft.fallback_url) } : {}),
  };
}

/** The PATCH's protection fields: a new password, its removal, a changed or emptied (null) fallback. */
export function protectionPatch(
  draft: ProtectionDraft,
  link: Link,
  encode: (url: string) => string,
): { password?: string | null; fallback_url?: string | null } {
  const patch: { password?: string | null; fallback_url?: string | null } = {};
  if (draft.remove_password && link.has_password) patch.password = null;
  else if (draft.password) patch.password = draft.password;
  if (draft.fallback_url.trim() !== (link.fallback_url ?? '')) patch.fallback_url = draft.fallback_url.trim() ? encode(draft.fallback_url) : null;
  return patch;
}

/** The "Protected" badge of a link with a password (the links table, a link's page). */
export function ProtectedBadge({ link }: { link: Link }) {
  const { t } = useI18n();
  return link.has_password ? <span class="link-state link-protected">{t('links.protection.badge')}</span> : null;
}

/** The protection fieldset of the create and edit forms; `link` is the link being edited. */
export function ProtectionFields({
  draft,
  set,
  errors,
  prefix,
  link,
}: {
  draft: ProtectionDraft;
  set: (patch: Partial<ProtectionDraft>) => void;
  errors: Record<string, string>;
  prefix: string;
  link?: Link;
}) {
  const { t } = useI18n();
  const id = (field: string) => `${prefix}-${field}`;
  const aria = (field: string) => ({
    'aria-invalid': errors[field] ? true : undefined,
    'aria-describedby': [`${id(field)}-hint`, errors[field] ? `${id(field)}-error` : ''].filter(Boolean).join(' '),
  });
  const protectedNow = link?.has_password ?? false;
  return (
    <fieldset class="link-protection">
      <legend>{t('links.protection.legend')}</legend>
      <div class="form-grid">
        <Field
          id={id('password')}
          label={t(protectedNow ? 'links.protection.password_new' : 'links.protection.password')}
          hint={t(protectedNow ? 'links.protection.password_keep_hint' : 'links.protection.password_hint')}
          error={errors.password}
        >
          <input
            id={id('password')}
            type="password"
            autocomplete="new-password"
            minLength={4}
            maxLength={128}
            value={draft.password}
            disabled={draft.remove_password}
            onInput={(event) => set({ password: event.currentTarget.value })}
            {...aria('password')}
          />
        </Field>
        <Field id={id('fallback_url')} label={t('links.protection.fallback')} hint={t('links.protection.fallback_hint')} error={errors.fallback_url}>
          <input
            id={id('fallback_url')}
            type="url"
            inputMode="url"
            value={draft.fallback_url}
            onInput={(event) => set({ fallback_url: event.currentTarget.value })}
            {...aria('fallback_url')}
          />
        </Field>
      </div>
      {protectedNow ? (
        <div class="checkbox">
          <input
            id={id('remove_password')}
            type="checkbox"
            checked={draft.remove_password}
            onChange={(event) => set({ remove_password: event.currentTarget.checked, password: '' })}
          />
          <label for={id('remove_password')}>{t('links.protection.remove_password')}</label>
        </div>
      ) : null}
    </fieldset>
  );
}
