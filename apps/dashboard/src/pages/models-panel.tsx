/**
 * The Models panel of the Computers page: each model role, and for a role with several servers its pool — every
 * server up or down (with the next probe), calls in flight of its concurrency, waiting, failures and moves to another
 * server, queue wait and cache-affinity hit rate. From `GET /api/models`.
 */
import { age } from '../format.js';
import { visible } from '../text.js';
import type { WireModels } from '../wire.js';

function ms(value: number): string {
  return value < 1000 ? `${Math.round(value)} ms` : `${(value / 1000).toFixed(1)} s`;
}

/** The panel; `models` undefined while loading (or when the server has no `/api/models`). */
export function ModelsPanel({ models, now }: { models: WireModels | undefined; now: number }) {
  return (
    <section aria-labelledby="models-h" class="models-panel">
      <h2 id="models-h">Models</h2>
      {models === undefined ? (
        <p class="muted">Loading…</p>
      ) : (
        <>
          <ul class="models" aria-label="Model roles">
            {models.roles.map((r) => (
              <li key={r.role} data-role={r.role}>
                {r.role}: <code>{visible(r.name)}</code>{' '}
                <span class="muted">
                  {r.provider === 'pool' ? 'pool of servers' : visible(r.provider)} · {visible(r.url)}
                </span>
              </li>
            ))}
          </ul>
          {models.pools.length === 0 && (
            <p class="muted">
              No pool of servers: each role has one server (models.&lt;role&gt;.servers adds more).
            </p>
          )}
          {models.pools.map((pool) => (
            <table class="tools pool" key={pool.name} data-pool={pool.name}>
              <caption>
                Pool {visible(pool.name)} — {pool.queued} waiting
              </caption>
              <thead>
                <tr>
                  <th scope="col">server</th>
                  <th scope="col">state</th>
                  <th scope="col">in flight</th>
                  <th scope="col">waiting</th>
                  <th scope="col">calls</th>
                  <th scope="col">failed / moved</th>
                  <th scope="col">wait avg / max</th>
                  <th scope="col">cache affinity</th>
                </tr>
              </thead>
              <tbody>
                {pool.servers.map((s) => (
                  <tr key={s.name} data-server={s.name} data-state={s.state}>
                    <td>
                      <code>{visible(s.name)}</code> <span class="muted">{visible(s.provider)}</span>
                    </td>
                    <td>
                      <span class={`badge ${s.state === 'up' ? 's-completed' : 's-failed'}`}>{s.state}</span>
                      {s.state === 'down' && s.next_probe_at !== undefined && (
                        <span class="muted"> probe in {age(now, s.next_probe_at)}</span>
                      )}
                      {s.last_error !== undefined && (
                        <div class="error" title={visible(s.last_error.message)}>
                          {visible(s.last_error.code)}: {visible(s.last_error.message).slice(0, 120)}
                        </div>
                      )}
                    </td>
                    <td>
                      {s.in_flight} / {s.concurrency}
                    </td>
                    <td>{s.queued}</td>
                    <td>{s.calls}</td>
                    <td>
                      {s.failures} / {s.failovers}
                    </td>
                    <td>{s.calls === 0 ? '—' : `${ms(s.wait_ms_total / s.calls)} / ${ms(s.wait_ms_max)}`}</td>
                    <td>
                      {s.affinity_hit_rate === null
                        ? '—'
                        : `${Math.round(s.affinity_hit_rate * 100)}% of ${s.affinity_hits + s.affinity_misses}`}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          ))}
        </>
      )}
    </section>
  );
}
