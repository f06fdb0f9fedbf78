/** Small display helpers. */

/** "12 s", "4 min", "3 h", "2 d" since `at` (ms). */
export function age(at: number, now: number): string {
  const s = Math.max(0, Math.round((now - at) / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.round(m / 60);
  if (h < 48) return `${h} h`;
  return `${Math.round(h / 24)} d`;
}

/** Milliseconds as "850 ms" / "2.4 s" / "3.1 min". */
export function duration(ms: number | undefined): string {
  if (ms === undefined) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${(ms / 60_000).toFixed(1)} min`;
}

/** A timestamp as local date and time. */
export function when(at: number | undefined): string {
  if (at === undefined) return '';
  return new Date(at).toLocaleString();
}

/** A status as words ("waiting_for_user" → "waiting for user"). */
export function statusText(s: string): string {
  return s.replace(/_/g, ' ');
}
