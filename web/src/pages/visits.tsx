import { useI18n } from '../app/i18n.js';
import { PageHeader } from '../app/ui.js';

export function VisitsPage() {
  const { t } = useI18n();
  return <PageHeader title={t('visits.title')} />;
}
