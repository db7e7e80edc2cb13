/** The pages' shared state: the live event stream, fetched data, a ticking clock. */
import { createContext } from "preact";
import { useContext, useEffect, useState } from "preact/hooks";
import type { OverviewView, SessionView } from "../src/types.js";
import { get, isLeaving, toLogin } from "./api.js";

/** What the event stream brought so far. */
export interface Live {
  sessions: SessionView[] | undefined;
  overview: OverviewView | undefined;
  /** Per kind, how many "changed" notices came (pages fetch again when theirs moves). */
  changed: Record<string, number>;
  connected: boolean;
}

/** Where the shell hands its live state to the pages. */
export const LiveContext = createContext<Live>({
  sessions: undefined,
  overview: undefined,
  changed: {},
  connected: false,
});

/** The live state the shell keeps (one event stream for every page). */
export const useLiveState = () => useContext(LiveContext);

/** Opens the event stream (`/api/events`) and keeps what it sends; the shell's one stream. */
export function useLive(): Live {
  const [live, setLive] = useState<Live>({
    sessions: undefined,
    overview: undefined,
    changed: {},
    connected: false,
  });
  useEffect(() => {
    const events = new EventSource("/api/events");
    events.addEventListener("open", () => setLive((l) => ({ ...l, connected: true })));
    events.addEventListener("error", () => {
      if (isLeaving()) return;
      setLive((l) => ({ ...l, connected: false }));
      // A stream refused for want of a session: back to the login page.
      void fetch("/api/overview").then((a) => a.status === 401 && toLogin());
    });
    events.addEventListener("sessions", (e) => {
      const sessions = JSON.parse((e as MessageEvent<string>).data) as SessionView[];
      setLive((l) => ({ ...l, sessions }));
    });
    events.addEventListener("overview", (e) => {
      const overview = JSON.parse((e as MessageEvent<string>).data) as OverviewView;
      setLive((l) => ({ ...l, overview }));
    });
    events.addEventListener("changed", (e) => {
      const kinds = JSON.parse((e as MessageEvent<string>).data) as string[];
      setLive((l) => {
        const changed = { ...l.changed };
        for (const kind of kinds) changed[kind] = (changed[kind] ?? 0) + 1;
        return { ...l, changed };
      });
    });
    return () => events.close();
  }, []);
  return live;
}

/** Data fetched from `path`, again whenever `version` moves. */
export function useFetched<T>(path: string, version: unknown): [T | undefined, string, () => void] {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState("");
  const [bump, setBump] = useState(0);
  useEffect(() => {
    let current = true;
    get<T>(path).then(
      (d) => {
        if (!current) return;
        setData(d);
        setError("");
      },
      (e: unknown) => {
        if (current) setError(e instanceof Error ? e.message : String(e));
      },
    );
    return () => {
      current = false;
    };
  }, [path, version, bump]);
  return [data, error, () => setBump((b) => b + 1)];
}

/** Now, moving every second (elapsed times). */
export function useNow(): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, []);
  return now;
}
