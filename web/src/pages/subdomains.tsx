import { useI18n } from '../app/i18n.js';
import { PageHeader } from '../app/ui.js';

export function SubdomainsPage() {
  const { t } = useI18n();
  return <PageHeader title={t('subdomains.title')} />;
}
