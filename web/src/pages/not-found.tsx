import { useI18n } from '../app/i18n.js';
import { PageHeader } from '../app/ui.js';

/** A dashboard path that is no page. */
export function NotFoundPage() {
  const { t } = useI18n();
  return (
    <>
      <PageHeader title={t('state.not_found')} />
      <p>
        <a href="/">{t('state.back_home')}</a>
      </p>
    </>
  );
}
