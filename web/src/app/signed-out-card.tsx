// The frame of the signed-out pages (sign-in, its second step, forgotten and reset password): the
// brand and the language picker above one card, whose heading is also the document's title.
import type { ComponentChildren } from 'preact';
import { useEffect } from 'preact/hooks';
import { useI18n } from './i18n.js';
import { LanguagePicker } from './shell.js';

export function SignedOutCard({ title, children }: { title: string; children: ComponentChildren }) {
  const { t } = useI18n();
  useEffect(() => {
    document.title = `${title} · linktrack`;
  }, [title]);
  return (
    <div class="login">
      <div class="login-top">
        <span class="brand">{t('app.name')}</span>
        <LanguagePicker />
      </div>
      <main class="login-card" id="content">
        <h1>{title}</h1>
        {children}
      </main>
    </div>
  );
}
