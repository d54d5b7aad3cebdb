// Who is signed in. The token lives in memory and in sessionStorage (this tab only, gone when it closes): never in a
// URL, a cookie or localStorage. Sending it only in the Authorization header (HTTP) and the websocket's
// connection_init payload means no ambient credential a cross-site request could ride on (no CSRF).
import { createContext, type ReactNode, useCallback, useContext, useEffect, useMemo, useState } from "react";
import { Provider } from "urql";
import { makeClient } from "./client";

const STORAGE_KEY = "dynaforge.session";

export interface Session {
  token: string;
  username: string;
  /** A crowd study participant's session: the study's page (/crowd/<platform>/<study>). */
  crowd?: string;
}

interface AuthState {
  session: Session | null;
  signIn: (session: Session) => void;
  signOut: () => void;
}

const AuthContext = createContext<AuthState>({ session: null, signIn: () => {}, signOut: () => {} });

function stored(): Session | null {
  try {
    const raw = sessionStorage.getItem(STORAGE_KEY);
    const value = raw ? (JSON.parse(raw) as Partial<Session>) : null;
    return value && typeof value.token === "string" && typeof value.username === "string"
      ? {
          token: value.token,
          username: value.username,
          ...(typeof value.crowd === "string" && value.crowd.startsWith("/crowd/") ? { crowd: value.crowd } : {}),
        }
      : null;
  } catch {
    return null;
  }
}

export function AuthProvider({ children }: { children: ReactNode }) {
  const [session, setSession] = useState<Session | null>(stored);
  const signIn = useCallback((next: Session) => {
    sessionStorage.setItem(STORAGE_KEY, JSON.stringify(next));
    setSession(next);
  }, []);
  const signOut = useCallback(() => {
    sessionStorage.removeItem(STORAGE_KEY);
    setSession(null);
  }, []);
  const token = session?.token ?? null;
  const made = useMemo(() => makeClient(token), [token]);
  useEffect(() => made.dispose, [made]);
  const state = useMemo(() => ({ session, signIn, signOut }), [session, signIn, signOut]);
  return (
    <AuthContext.Provider value={state}>
      <Provider value={made.client}>{children}</Provider>
    </AuthContext.Provider>
  );
}

export const useAuth = (): AuthState => useContext(AuthContext);
