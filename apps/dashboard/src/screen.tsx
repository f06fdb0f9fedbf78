/**
 * A computer's screen, live (issue 36 item 3): reads `GET /api/clients/:id/screen/stream` (fetch with the
 * `Authorization` header, as events.ts does) and draws the rows in CC's colours, in a monospace grid. Read-only; text
 * is drawn as text nodes only. Shown beside a task (`ScreenPanel`) and on a computer's page (`#/computers/<id>`).
 */
import { useEffect, useState } from 'preact/hooks';
import type { HttpScreen, ScreenSwitchResponse } from '@ccagent/protocol';
import { authHeaders, request } from './api.js';
import { useFeatures } from './features.js';
import { age } from './format.js';
import { applyScreen, rowRuns, type ScreenState } from './screen-model.js';
import { SseParser } from './sse-parser.js';
import { visible } from './text.js';
import './screen.css';

type Phase = 'connecting' | 'waiting' | 'live' | 'offline' | 'refused';

/** Follow a computer's screen: its state (undefined until one arrives) and the stream's phase. */
export function useScreen(clientId: string): { screen: ScreenState | undefined; phase: Phase } {
  const [screen, setScreen] = useState<ScreenState | undefined>(undefined);
  const [phase, setPhase] = useState<Phase>('connecting');
  useEffect(() => {
    let stopped = false;
    let ctl: AbortController | undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let current: ScreenState | undefined;
    setScreen(undefined);
    setPhase('connecting');
    const run = async (): Promise<void> => {
      ctl = new AbortController();
      const parser = new SseParser();
      try {
        const res = await fetch(`/api/clients/${encodeURIComponent(clientId)}/screen/stream`, {
          headers: { accept: 'text/event-stream', ...authHeaders() },
          signal: ctl.signal,
          cache: 'no-store',
        });
        if (!res.ok || !res.body) {
          setPhase('refused');
          return;
        }
        setPhase(current ? (current.connected ? 'live' : 'offline') : 'waiting');
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          for (const r of parser.push(value)) {
            if (r.event === 'offline') {
              if (current) current = { ...current, connected: false };
              setScreen(current);
              setPhase('offline');
            } else if (r.event === 'screen') {
              let rec: HttpScreen;
              try {
                rec = JSON.parse(r.data) as HttpScreen;
              } catch {
                continue;
              }
              current = applyScreen(current, rec);
              setScreen(current);
              setPhase(current?.connected === false ? 'offline' : 'live');
            }
          }
        }
      } catch {
        // dropped: retry below
      }
      if (stopped) return;
      timer = setTimeout(() => void run(), 2000);
    };
    void run();
    return () => {
      stopped = true;
      ctl?.abort();
      if (timer !== undefined) clearTimeout(timer);
    };
  }, [clientId]);
  return { screen, phase };
}

/** The rows of a screen in CC's colours. */
export function ScreenGrid({ screen, label }: { screen: ScreenState; label: string }) {
  const rows = [];
  for (let y = 1; y <= screen.height; y++) {
    rows.push(
      <div class="cc-row" key={y}>
        {rowRuns(screen, y).map((run, i) =>
          run.cursorAt === undefined ? (
            <span key={i} style={{ color: run.fg, background: run.bg }}>
              {run.text}
            </span>
          ) : (
            <span key={i} style={{ color: run.fg, background: run.bg }}>
              {run.text.slice(0, run.cursorAt)}
              <span class="cc-cursor">{run.text.slice(run.cursorAt, run.cursorAt + 1)}</span>
              {run.text.slice(run.cursorAt + 1)}
            </span>
          ),
        )}
      </div>,
    );
  }
  return (
    <div
      class="cc-screen"
      role="img"
      aria-label={label}
      data-testid="cc-screen"
      data-width={screen.width}
      data-height={screen.height}
      style={{ width: `${screen.width}ch` }}
    >
      {rows}
    </div>
  );
}

const PHASE_TEXT: Record<Phase, string> = {
  connecting: 'connecting…',
  waiting: 'no screen yet',
  live: 'live',
  offline: 'offline: last screen',
  refused: 'not available',
};

/** A computer's screen with its state line; `now` for the "changed … ago" figure. */
export function ScreenView({ clientId, now }: { clientId: string; now: number }) {
  const { screen, phase } = useScreen(clientId);
  return (
    <div class="cc-screen-view" data-phase={phase}>
      <p class="muted cc-screen-state" data-testid="screen-state">
        <span class={`dot ${phase === 'live' ? 'on' : 'off'}`} aria-hidden="true" /> {PHASE_TEXT[phase]}
        {screen && ` · ${screen.width}×${screen.height} · changed ${age(screen.updatedAt, now)} ago`}
      </p>
      {screen ? (
        <ScreenGrid screen={screen} label={`Screen of ${visible(clientId)}`} />
      ) : (
        phase !== 'connecting' && (
          <p class="muted">
            The screen mirror is off (here, or on the computer: <code>set ccagent.screen false</code> wins),
            or the computer has not connected since the server started.
          </p>
        )
      )}
    </div>
  );
}

/** The screen beside a task: shown when the computer mirrors it, else one quiet line. */
export function ScreenPanel({ clientId, now }: { clientId: string; now: number }) {
  const { screen, phase } = useScreen(clientId);
  const link = (
    <a href={`#/computers/${encodeURIComponent(clientId)}`} class="small">
      open
    </a>
  );
  if (!screen) {
    return (
      <p class="muted cc-screen-panel" data-testid="screen-state">
        Screen of <code>{visible(clientId)}</code>: {phase === 'connecting' ? 'connecting…' : 'not mirrored'}{' '}
        {link}
      </p>
    );
  }
  return (
    <details class="cc-screen-panel" open>
      <summary>
        Screen of <code>{visible(clientId)}</code> <span class="muted">{PHASE_TEXT[phase]}</span> {link}
      </summary>
      <ScreenGrid
        screen={screen}
        label={`Screen of ${visible(clientId)} (${age(screen.updatedAt, now)} ago)`}
      />
    </details>
  );
}

const WORD = { true: 'on', false: 'off', null: 'the computer decides' } as const;

/** The server's switch of the mirror: what it says, and for an operator a choice (stored, sent to the computer). */
function SwitchLine({ clientId, onChange }: { clientId: string; onChange: (v: unknown) => void }) {
  const [sw, setSw] = useState<ScreenSwitchResponse | string>('…');
  const operator = useFeatures().role === 'operator';
  const url = `/api/clients/${encodeURIComponent(clientId)}/screen/switch`;
  const fail = (e: Error): void => setSw(e.message);
  useEffect(() => {
    request<ScreenSwitchResponse>(url).then(setSw, fail);
  }, [url]);
  if (typeof sw === 'string') return <p class="muted">{sw}</p>;
  return (
    <p class="muted" data-testid="screen-switch">
      Mirror at the server:{' '}
      {operator ? (
        <select
          aria-label="Screen mirror at the server"
          value={String(sw.switch)}
          onChange={(e) => {
            const v = JSON.parse(e.currentTarget.value) as boolean | null;
            request<ScreenSwitchResponse>(url, { method: 'POST', body: { screen: v } }).then((r) => {
              setSw(r);
              onChange(r.server);
            }, fail);
          }}
        >
          <option value="null">config file ({WORD[`${sw.configured}`]})</option>
          <option value="true">on</option>
          <option value="false">off</option>
        </select>
      ) : (
        WORD[`${sw.server}`]
      )}
    </p>
  );
}

/** `#/computers/<id>`: one computer's screen. */
export function ComputerScreenPage({ clientId, now }: { clientId: string; now: number }) {
  const [word, setWord] = useState<unknown>(undefined);
  return (
    <section class="page" aria-labelledby="screen-h">
      <p class="crumbs">
        <a href="#/computers">← Computers</a>
      </p>
      <h1 id="screen-h">
        Computer <code>{visible(clientId)}</code>
      </h1>
      <SwitchLine clientId={clientId} onChange={setWord} />
      <ScreenView key={String(word)} clientId={clientId} now={now} />
    </section>
  );
}
