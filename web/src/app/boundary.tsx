// Failures outside the API's answers — a page that throws while rendering, an action that throws in
// the browser (an API this origin does not offer, a bug) — are shown, never swallowed: a click that
// does nothing is the worst answer a dashboard can give.
import { Component, type ComponentChildren } from 'preact';
import { useLocation } from 'preact-iso';
import { useEffect, useState } from 'preact/hooks';
import { useI18n } from './i18n.js';
import { ErrorState } from './ui.js';

const asError = (thrown: unknown) => (thrown instanceof Error ? thrown : new Error(String(thrown)));

class Boundary extends Component<{ children: ComponentChildren; path: string }, { error?: Error }> {
  static getDerivedStateFromError(thrown: unknown) {
    return { error: asError(thrown) };
  }

  componentDidUpdate(previous: { path: string }) {
    // Another page: it gets its own chance.
    if (previous.path !== this.props.path && this.state.error) this.setState({ error: undefined });
  }

  render() {
    const { error } = this.state;
    return error ? <ErrorState error={error} retry={() => this.setState({ error: undefined })} /> : this.props.children;
  }
}

/** Shows the error of a page that failed to render (with a retry) instead of an empty page; a new page starts afresh. */
export function PageBoundary({ children }: { children: ComponentChildren }) {
  const { path } = useLocation();
  return <Boundary path={path}>{children}</Boundary>;
}

/** An alert for errors no page caught (thrown by event handlers, rejected promises), until dismissed. */
export function UnexpectedErrors() {
  const { t } = useI18n();
  const [error, setError] = useState<Error>();
  useEffect(() => {
    // Only thrown errors: the browser's own reports (a ResizeObserver loop) carry none.
    const onError = (event: ErrorEvent) => {
      if (event.error) setError(asError(event.error));
    };
    const onRejection = (event: PromiseRejectionEvent) => setError(asError(event.reason));
    window.addEventListener('error', onError);
    window.addEventListener('unhandledrejection', onRejection);
    return () => {
      window.removeEventListener('error', onError);
      window.removeEventListener('unhandledrejection', onRejection);
    };
  }, []);
  if (!error) return null;
  return (
    <div class="notice notice-error unexpected-error" role="alert">
      <p>
        <strong>{t('state.error')}</strong>: {error.message}
      </p>
      <button type="button" class="button-small" onClick={() => setError(undefined)}>
        {t('action.close')}
      </button>
    </div>
  );
}
