/**
 * What this server offers beyond the basic task routes (`GET /api/dashboard`): routes added by later versions (a
 * follow-up message, retry, per-task settings) are enabled only when the server says it has them, and shown
 * disabled with the reason otherwise.
 */
import { useEffect, useState } from 'preact/hooks';
import { api } from './api.js';

/** The server's answer (empty lists until it arrives or when the server is older than the route). */
export interface Features {
  features: string[];
  taskKinds: string[];
  /** The caller's role (`operator`, `viewer`, `computer`); `operator` until known or from an older server. */
  role: string;
  loaded: boolean;
}

/** Text shown on what a viewer key may not do (the server refuses it with 403 anyway). */
export const VIEWER_NOTE = 'Signed in with a viewer key: you can watch tasks, not start, stop or steer them.';

let cached: Promise<Features> | undefined;

/** Ask once per page load. */
export function loadFeatures(): Promise<Features> {
  cached ??= api
    .features()
    .then((f) => ({
      features: f.features,
      taskKinds: f.task_kinds,
      role: f.role ?? 'operator',
      loaded: true,
    }))
    .catch(() => {
      cached = undefined;
      return { features: [], taskKinds: [], role: 'operator', loaded: false };
    });
  return cached;
}

/** Ask again on the next use (the kinds changed: a kind was saved or removed). */
export function forgetFeatures(): void {
  cached = undefined;
}

/** The features, re-rendering when they arrive. */
export function useFeatures(): Features {
  const [f, setF] = useState<Features>({ features: [], taskKinds: [], role: 'operator', loaded: false });
  useEffect(() => {
    void loadFeatures().then(setF);
  }, []);
  return f;
}
