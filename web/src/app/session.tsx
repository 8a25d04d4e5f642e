// Who is signed in: GET /api/v1/me over the session cookie. A 401 on any call (the session
// expired or was revoked) returns the dashboard to the sign-in page.
import { createContext, type ComponentChildren } from 'preact';
import { useCallback, useContext, useEffect, useState } from 'preact/hooks';
import { api, ApiError, load, onSignedOut, type Schemas } from '../api/client.js';

export type Me = Awaited<ReturnType<typeof fetchMe>>;

async function fetchMe() {
  return load(api.GET('/api/v1/me'));
}

export type SessionState =
  | { state: 'loading' }
  | { state: 'signed-out'; reason?: 'expired' | 'signed-out' | 'deleted' }
  | { state: 'signed-in'; me: Me }
  | { state: 'error'; error: Error };

export interface Session {
  session: SessionState;
  /** After a successful POST /auth/login: reads the account again. */
  refresh: () => Promise<void>;
  signOut: () => Promise<void>;
  /** After DELETE /api/v1/me: the account is gone, and the sign-in page says so. */
  deleted: () => void;
}

const SessionContext = createContext<Session>({
  session: { state: 'loading' },
  refresh: async () => undefined,
  signOut: async () => undefined,
  deleted: () => undefined,
});

export function SessionProvider({ children }: { children: ComponentChildren }) {
  const [session, setSession] = useState<SessionState>({ state: 'loading' });
  const refresh = useCallback(async () => {
    try {
      setSession({ state: 'signed-in', me: await fetchMe() });
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) setSession({ state: 'signed-out' });
      else setSession({ state: 'error', error: error instanceof Error ? error : new Error(String(error)) });
    }
  }, []);
  const signOut = useCallback(async () => {
    try {
      await load(api.POST('/auth/logout'));
    } catch (error) {
      // Already signed out (401): the same end state.
      if (!(error instanceof ApiError && error.status === 401)) throw error;
    }
    setSession({ state: 'signed-out', reason: 'signed-out' });
  }, []);
  const deleted = useCallback(() => setSession({ state: 'signed-out', reason: 'deleted' }), []);
  useEffect(() => {
    void refresh();
    return onSignedOut(() => setSession((current) => (current.state === 'signed-in' ? { state: 'signed-out', reason: 'expired' } : current)));
  }, [refresh]);
  return <SessionContext.Provider value={{ session, refresh, signOut, deleted }}>{children}</SessionContext.Provider>;
}

export function useSession(): Session {
  return useContext(SessionContext);
}

/** The signed-in account (only under the shell, which renders pages for a signed-in account only). */
export function useMe(): Me {
  const { session } = useSession();
  if (session.state !== 'signed-in') throw new Error('useMe outside a signed-in session');
  return session.me;
}

export type User = Schemas['User'];
