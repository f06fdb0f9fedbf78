/** `ccagent models`: the model roles, then each pool of servers with its servers' state and figures. */
import type { ModelsResponse } from '@ccagent/protocol';
import { oneLine, paint, table, type Output } from './output.js';

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

/** Control characters from a server's answer made visible (`\u001b`), never passed to the terminal. */
function visible(text: string): string {
  return text.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function seconds(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** The roles table and one table per pool. `now` (epoch ms) turns the next probe time into "in 4 s". */
export function renderModels(out: Output, view: ModelsResponse, now: number): string {
  const parts: string[] = [];
  parts.push(
    table(
      out,
      ['ROLE', 'MODEL', 'PROVIDER', 'SERVER'],
      view.roles.map((r) => [r.role, visible(r.name), r.provider, visible(r.url)]),
    ),
  );
  if (view.pools.length === 0) {
    parts.push('no pools of servers (a role with several servers has one: models.<role>.servers)\n');
    return parts.join('\n');
  }
  for (const pool of view.pools) {
    const rows = pool.servers.map((s) => {
      const state =
        s.state === 'up'
          ? paint(out, 'green', 'up')
          : paint(
              out,
              'red',
              `down${s.next_probe_at !== undefined ? `, probe in ${seconds(Math.max(0, s.next_probe_at - now))}` : ''}`,
            );
      const waits = s.calls === 0 ? '-' : `${seconds(s.wait_ms_total / s.calls)} / ${seconds(s.wait_ms_max)}`;
      const affinity =
        s.affinity_hit_rate === null
          ? '-'
          : `${Math.round(s.affinity_hit_rate * 100)}% of ${s.affinity_hits + s.affinity_misses}`;
      return [
        visible(s.name),
        state,
        `${s.in_flight}/${s.concurrency}`,
        String(s.queued),
        String(s.calls),
        `${s.failures}/${s.failovers}`,
        waits,
        affinity,
        s.last_error ? oneLine(visible(`${s.last_error.code}: ${s.last_error.message}`), 60) : '',
      ];
    });
    parts.push(
      `pool ${visible(pool.name)}: ${pool.queued} waiting\n` +
        table(
          out,
          [
            'SERVER',
            'STATE',
            'IN FLIGHT',
            'QUEUED',
            'CALLS',
            'FAILED/MOVED',
            'WAIT AVG/MAX',
            'AFFINITY',
            'LAST ERROR',
          ],
          rows,
        ),
    );
  }
  return parts.join('\n');
}
