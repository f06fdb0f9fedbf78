/**
 * One Minecraft instance, live (`#/minecraft/<id>`): the player's state (position, health, hunger, dimension,
 * inventory), the mod's `log` lines and each action with its outcome and duration, as they happen. The page loads
 * `GET /api/minecraft/instances/:id/activity` once and then follows the live stream's `mc_instance`, `mc_log` and
 * `mc_action` records (it reloads only after a `resync`); newest first. Lists are bounded ({@link LOG_MAX} lines,
 * {@link ACTION_MAX} actions, {@link INVENTORY_MAX} inventory rows); every text from the game (log lines, item and
 * dimension names, errors, results) is shown as text, with control characters made visible.
 */
import type { HttpMinecraftAction, HttpMinecraftInstance, HttpMinecraftLog } from '@ccagent/protocol';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, request } from '../api.js';
import { live } from '../events.js';
import { duration } from '../format.js';
import { Line, visible } from '../text.js';

/** Log lines kept on the page (the oldest go first). */
export const LOG_MAX = 200;
/** Actions kept on the page. */
export const ACTION_MAX = 100;
/** Inventory rows drawn (a mod may report up to 512 slots). */
export const INVENTORY_MAX = 64;

/** The mod protocol's `state_update` data (only what this page shows; everything optional: it is the mod's). */
interface McState {
  position?: { x: number; y: number; z: number };
  health?: number;
  hunger?: number;
  saturation?: number;
  dimension?: string;
  gameMode?: string;
  inventory?: Array<{ slot: number; item: string; count: number }>;
}

interface Activity {
  /** Null: not back since the server restarted (the lists are what it kept). */
  instance: HttpMinecraftInstance | null;
  logs: HttpMinecraftLog[];
  actions: HttpMinecraftAction[];
}

/** `a` and `b` as one list by `seq`, oldest first, the last {@link LOG_MAX}. */
export function mergeLogs(a: HttpMinecraftLog[], b: HttpMinecraftLog[]): HttpMinecraftLog[] {
  const bySeq = new Map<number, HttpMinecraftLog>();
  for (const l of a) bySeq.set(l.seq, l);
  for (const l of b) bySeq.set(l.seq, l);
  return [...bySeq.values()].sort((x, y) => x.seq - y.seq).slice(-LOG_MAX);
}

/** `a` with `b`'s records added or replacing theirs (an ended record is never replaced by its start), the last {@link ACTION_MAX}. */
export function mergeActions(a: HttpMinecraftAction[], b: HttpMinecraftAction[]): HttpMinecraftAction[] {
  const byId = new Map<string, HttpMinecraftAction>();
  for (const r of [...a, ...b]) {
    const had = byId.get(r.action_id);
    if (had !== undefined && had.ended_at !== null && r.ended_at === null) continue;
    byId.set(r.action_id, r);
  }
  return [...byId.values()].sort((x, y) => x.started_at - y.started_at).slice(-ACTION_MAX);
}

function fixed(n: number | undefined): string {
  return typeof n === 'number' && Number.isFinite(n) ? (Math.round(n * 10) / 10).toString() : '?';
}

function clock(at: number): string {
  return new Date(at).toLocaleTimeString();
}

/** The live page of instance `id`. */
export function McInstancePage({ id }: { id: string }) {
  const [data, setData] = useState<Activity | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  // Re-render each second while an action runs (its duration so far).
  const [now, setNow] = useState(Date.now());
  const running = data?.actions.some((a) => a.ended_at === null) ?? false;
  useEffect(() => {
    if (!running) return;
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, [running]);

  useEffect(() => {
    let pendingLogs: HttpMinecraftLog[] = [];
    let pendingActions: HttpMinecraftAction[] = [];
    let pendingInstance: HttpMinecraftInstance | undefined;
    let loaded = false;
    const load = (): void => {
      request<Activity>(`/api/minecraft/instances/${encodeURIComponent(id)}/activity`)
        .then((r) => {
          loaded = true;
          // Records that came while loading are merged in: nothing between the snapshot and the stream is lost.
          setData({
            instance: pendingInstance ?? r.instance,
            logs: mergeLogs(r.logs, pendingLogs),
            actions: mergeActions(r.actions, pendingActions),
          });
          pendingLogs = [];
          pendingActions = [];
          pendingInstance = undefined;
          setError(undefined);
        })
        .catch((e: unknown) => setError(e instanceof ApiError ? e.message : String(e)));
    };
    const off = live.on((e) => {
      if (e.type === 'resync') {
        // Records until the new snapshot arrives are merged into it, as on the first load.
        loaded = false;
        return load();
      }
      if (e.type !== 'mc_instance' && e.type !== 'mc_log' && e.type !== 'mc_action') return;
      if (e.data.instance_id !== id) return;
      if (!loaded) {
        if (e.type === 'mc_instance') pendingInstance = e.data;
        else if (e.type === 'mc_log') pendingLogs = mergeLogs(pendingLogs, [e.data]);
        else pendingActions = mergeActions(pendingActions, [e.data]);
        return;
      }
      setData((d) => {
        if (d === undefined) return d;
        if (e.type === 'mc_instance') return { ...d, instance: e.data };
        if (e.type === 'mc_log') return { ...d, logs: mergeLogs(d.logs, [e.data]) };
        return { ...d, actions: mergeActions(d.actions, [e.data]) };
      });
    });
    load();
    return off;
  }, [id]);

  const i = data?.instance ?? undefined;
  const s = (i?.last_state ?? null) as McState | null;
  const p = s?.position;
  const inventory = [...(Array.isArray(s?.inventory) ? s.inventory : [])].sort((a, b) => a.slot - b.slot);
  return (
    <section class="page mc-instance" aria-labelledby="mci-h" data-instance-id={id}>
      <p>
        <a href="#/minecraft">← Minecraft</a>
      </p>
      <h1 id="mci-h">
        {i !== undefined && (
          <span
            class={`dot ${i.connected ? 'on' : i.status === 'disconnected' ? 'grace' : 'off'}`}
            aria-hidden="true"
          />
        )}
        {visible(id)}{' '}
        {i !== undefined ? (
          <span class="muted instance-state" data-testid="mci-status">
            {i.status} · Minecraft {visible(i.version)}
            {i.platform !== null ? ` (${visible(i.platform)})` : ''}
          </span>
        ) : (
          data !== undefined && (
            <span class="muted instance-state" data-testid="mci-status">
              not connected since the server started
            </span>
          )
        )}
      </h1>
      {error !== undefined && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {data === undefined ? (
        error === undefined && <p>Loading…</p>
      ) : (
        <>
          <h2>Player</h2>
          {s === null ? (
            <p class="muted">no state yet</p>
          ) : (
            <dl class="facts mc-facts">
              <div>
                <dt>Position</dt>
                <dd data-testid="mci-position">{p ? `${fixed(p.x)} ${fixed(p.y)} ${fixed(p.z)}` : '?'}</dd>
              </div>
              <div>
                <dt>Dimension</dt>
                <dd data-testid="mci-dimension">{visible(String(s.dimension ?? '?'))}</dd>
              </div>
              <div>
                <dt>Game mode</dt>
                <dd>{visible(String(s.gameMode ?? '?'))}</dd>
              </div>
              <div>
                <dt>Health</dt>
                <dd data-testid="mci-health">
                  <meter min={0} max={20} value={s.health ?? 0} aria-label="health" /> {fixed(s.health)} / 20
                </dd>
              </div>
              <div>
                <dt>Hunger</dt>
                <dd data-testid="mci-hunger">
                  <meter min={0} max={20} value={s.hunger ?? 0} aria-label="hunger" /> {fixed(s.hunger)} / 20
                </dd>
              </div>
              {i?.last_state_at !== null && i?.last_state_at !== undefined && (
                <div>
                  <dt>Updated</dt>
                  <dd>{clock(i.last_state_at)}</dd>
                </div>
              )}
            </dl>
          )}
          <div class="mc-cols">
            <div>
              <h2>Actions</h2>
              {data.actions.length === 0 ? (
                <p class="muted">No action yet.</p>
              ) : (
                <table class="tools mc-actions" aria-label="Actions">
                  <thead>
                    <tr>
                      <th scope="col">started</th>
                      <th scope="col">action</th>
                      <th scope="col">outcome</th>
                      <th scope="col">duration</th>
                      <th scope="col">task</th>
                    </tr>
                  </thead>
                  <tbody>
                    {[...data.actions].reverse().map((a) => (
                      <tr key={a.action_id} data-action-id={a.action_id}>
                        <td>{clock(a.started_at)}</td>
                        <td>
                          <code>{visible(a.type)}</code>
                        </td>
                        <td class="mc-outcome">
                          {a.ok === null ? (
                            <span class="badge s-running">running</span>
                          ) : a.ok ? (
                            <span class="badge s-completed">done</span>
                          ) : (
                            <span class="badge s-failed">{visible(a.code ?? 'failed')}</span>
                          )}
                          {(a.error ?? a.result) !== undefined && (
                            <span class="muted small-text">
                              {' '}
                              <Line text={a.error ?? a.result ?? ''} max={160} />
                            </span>
                          )}
                        </td>
                        <td class="mc-duration">
                          {a.duration_ms !== null
                            ? duration(a.duration_ms)
                            : `${duration(Math.max(0, now - a.started_at))}…`}
                        </td>
                        <td>
                          {a.task_id !== null && (
                            <a href={`#/tasks/${encodeURIComponent(a.task_id)}`}>{a.task_id.slice(0, 8)}</a>
                          )}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
            </div>
            <div>
              <h2>Inventory</h2>
              {inventory.length === 0 ? (
                <p class="muted">empty</p>
              ) : (
                <table class="tools mc-inventory" aria-label="Inventory">
                  <thead>
                    <tr>
                      <th scope="col">slot</th>
                      <th scope="col">item</th>
                      <th scope="col">count</th>
                    </tr>
                  </thead>
                  <tbody>
                    {inventory.slice(0, INVENTORY_MAX).map((it) => (
                      <tr key={it.slot}>
                        <td>{it.slot}</td>
                        <td>
                          <Line text={String(it.item)} max={80} />
                        </td>
                        <td>{it.count}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
              {inventory.length > INVENTORY_MAX && (
                <p class="muted">{inventory.length - INVENTORY_MAX} more stacks not shown</p>
              )}
            </div>
          </div>
          <h2>Mod log</h2>
          {data.logs.length === 0 ? (
            <p class="muted">The mod has sent no log line yet.</p>
          ) : (
            <ol class="mc-log" aria-label="Mod log" reversed>
              {[...data.logs].reverse().map((l) => (
                <li key={l.seq} data-seq={l.seq}>
                  <time class="muted">{clock(l.at)}</time> <Line text={l.message} max={500} />
                </li>
              ))}
            </ol>
          )}
        </>
      )}
    </section>
  );
}
