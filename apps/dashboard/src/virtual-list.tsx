/**
 * A virtualised list of fixed-height rows: only the rows in view (plus a margin) are in the DOM, so 10,000 tasks or
 * 5,000 steps cost the same to render as 30. Keyboard: the list is one tab stop; arrows, Page Up/Down, Home/End move
 * the active row and Enter opens it (aria-activedescendant tells screen readers which row that is).
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';

/** Props of {@link VirtualList}. */
export interface VirtualListProps {
  id: string;
  label: string;
  count: number;
  rowHeight: number;
  /** Render row `i` (it may be a placeholder while its page loads). */
  row: (i: number, active: boolean) => ComponentChildren;
  /** The rows in view changed (load their pages). */
  onRange?: (start: number, end: number) => void;
  /** Enter (or a click) on row `i`. */
  onOpen?: (i: number) => void;
  /** Keep the view pinned to the end while it is at the end (a live timeline). */
  followEnd?: boolean;
  /** The active row, when controlled (e.g. the selected step). */
  active?: number;
  onActive?: (i: number) => void;
  empty?: ComponentChildren;
}

const OVERSCAN = 8;

/** See the module comment. */
export function VirtualList(p: VirtualListProps) {
  const box = useRef<HTMLDivElement>(null);
  const [top, setTop] = useState(0);
  const [height, setHeight] = useState(600);
  const [ownActive, setOwnActive] = useState(0);
  const active = p.active ?? ownActive;
  const atEnd = useRef(true);

  useLayoutEffect(() => {
    const el = box.current;
    if (!el) return;
    const ro = new ResizeObserver(() => setHeight(el.clientHeight));
    ro.observe(el);
    setHeight(el.clientHeight);
    return () => ro.disconnect();
  }, []);

  // A live list that was scrolled to its end stays at its end as rows arrive.
  useLayoutEffect(() => {
    const el = box.current;
    if (!el || !p.followEnd || !atEnd.current) return;
    el.scrollTop = el.scrollHeight;
    setTop(el.scrollTop);
  }, [p.count, p.followEnd]);

  const start = Math.max(0, Math.floor(top / p.rowHeight) - OVERSCAN);
  const end = Math.min(p.count, Math.ceil((top + height) / p.rowHeight) + OVERSCAN);

  useEffect(() => {
    p.onRange?.(start, end);
  }, [start, end, p.count]);

  const setActive = (i: number): void => {
    const n = Math.max(0, Math.min(p.count - 1, i));
    if (p.onActive) p.onActive(n);
    else setOwnActive(n);
    const el = box.current;
    if (!el) return;
    const rowTop = n * p.rowHeight;
    if (rowTop < el.scrollTop) el.scrollTop = rowTop;
    else if (rowTop + p.rowHeight > el.scrollTop + el.clientHeight)
      el.scrollTop = rowTop + p.rowHeight - el.clientHeight;
  };

  const onKey = (e: KeyboardEvent): void => {
    const page = Math.max(1, Math.floor(height / p.rowHeight) - 1);
    const moves: Record<string, number> = {
      ArrowDown: active + 1,
      ArrowUp: active - 1,
      PageDown: active + page,
      PageUp: active - page,
      Home: 0,
      End: p.count - 1,
    };
    const to = moves[e.key];
    if (to !== undefined && p.count > 0) {
      e.preventDefault();
      setActive(to);
    } else if (e.key === 'Enter' && p.count > 0) {
      e.preventDefault();
      p.onOpen?.(active);
    }
  };

  const rows = [];
  for (let i = start; i < end; i++) {
    rows.push(
      <div
        key={i}
        id={`${p.id}-row-${i}`}
        role="option"
        aria-selected={i === active}
        class={`vrow${i === active ? ' active' : ''}`}
        style={{ top: `${i * p.rowHeight}px`, height: `${p.rowHeight}px` }}
        onClick={() => {
          setActive(i);
          p.onOpen?.(i);
        }}
      >
        {p.row(i, i === active)}
      </div>,
    );
  }

  return (
    <div
      ref={box}
      id={p.id}
      class="vlist"
      role="listbox"
      tabIndex={0}
      aria-label={p.label}
      aria-activedescendant={p.count > 0 ? `${p.id}-row-${active}` : undefined}
      onKeyDown={onKey}
      onScroll={(e) => {
        const el = e.currentTarget;
        atEnd.current = el.scrollTop + el.clientHeight >= el.scrollHeight - p.rowHeight;
        setTop(el.scrollTop);
      }}
    >
      {p.count === 0 ? (
        <div class="vempty">{p.empty}</div>
      ) : (
        <div class="vspace" style={{ height: `${p.count * p.rowHeight}px` }}>
          {rows}
        </div>
      )}
    </div>
  );
}
