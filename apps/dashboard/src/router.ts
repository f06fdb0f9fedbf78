/** Hash routing (`#/tasks/<id>`): works from any path the server mounts the page at, and needs no server routes. */
import { useEffect, useState } from 'preact/hooks';

/** The current route path, e.g. `/tasks/abc`. */
export function currentPath(): string {
  const h = window.location.hash.replace(/^#/, '');
  return h === '' ? '/tasks' : h;
}

/** Go to `path` (adds a history entry). */
export function navigate(path: string): void {
  window.location.hash = path;
}

/** Re-render on navigation; returns the path. */
export function useRoute(): string {
  const [path, setPath] = useState(currentPath());
  useEffect(() => {
    const on = (): void => setPath(currentPath());
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return path;
}
