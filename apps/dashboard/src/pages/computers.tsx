/**
 * Computers and the server: connected and recently seen CC clients with their commands, the model-written tools with
 * their lifecycle state and version, the tools the server runs itself, the model servers with each model present or missing (and the `ollama pull`
 * that fixes it), and the database. Kept current by `client` and `tool` events.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError } from '../api.js';
import { live } from '../events.js';
import { age } from '../format.js';
import { CopyButton, Line, visible } from '../text.js';
import type { WireClient, WireHealth, WireModels, WireServerTool, WireTool } from '../wire.js';
import { ModelsPanel } from './models-panel.js';

/** Computers page. */
export function ComputersPage({ now }: { now: number }) {
  const [clients, setClients] = useState<WireClient[] | undefined>(undefined);
  const [tools, setTools] = useState<WireTool[]>([]);
  const [serverTools, setServerTools] = useState<WireServerTool[]>([]);
  const [health, setHealth] = useState<WireHealth | undefined>(undefined);
  const [models, setModels] = useState<WireModels | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);

  useEffect(() => {
    const load = (): void => {
      Promise.all([api.clients(), api.tools()])
        .then(([c, t]) => {
          setClients(c.clients);
          setTools(t.tools);
          setServerTools(t.server_tools ?? []);
          setError(undefined);
        })
        .catch((e: unknown) => setError(e instanceof ApiError ? e.message : String(e)));
      // /health answers 503 with a body when the database is down: show that body.
      fetch('/health', { cache: 'no-store' })
        .then((r) => r.json() as Promise<WireHealth>)
        .then(setHealth)
        .catch(() => setHealth(undefined));
      api
        .models()
        .then(setModels)
        .catch(() => setModels(undefined));
    };
    load();
    // Pool servers change without an event (calls start and end, probes): refresh their figures every 5 s.
    const poll = setInterval(() => {
      api
        .models()
        .then(setModels)
        .catch(() => setModels(undefined));
    }, 5_000);
    let pending: ReturnType<typeof setTimeout> | undefined;
    const off = live.on((e) => {
      if (e.type !== 'client' && e.type !== 'tool' && e.type !== 'resync') return;
      if (pending !== undefined) return;
      pending = setTimeout(() => {
        pending = undefined;
        load();
      }, 100);
    });
    return () => {
      off();
      clearInterval(poll);
      if (pending !== undefined) clearTimeout(pending);
    };
  }, []);

  const sorted = [...(clients ?? [])].sort(
    (a, b) => Number(b.connected) - Number(a.connected) || b.last_seen_at - a.last_seen_at,
  );
  return (
    <section class="page" aria-labelledby="comp-h">
      <h1 id="comp-h">Computers</h1>
      {error !== undefined && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {clients === undefined ? (
        <p>Loading…</p>
      ) : sorted.length === 0 ? (
        <p class="muted">
          No computer has connected yet. On a CC computer:{' '}
          <code>wget run {window.location.origin}/lua/install.lua</code>
        </p>
      ) : (
        <ul class="cards" aria-label="Computers">
          {sorted.map((c) => (
            <li class="card" key={c.client_id} data-client-id={c.client_id}>
              <h2>
                <span class={`dot ${c.connected ? 'on' : c.in_grace ? 'grace' : 'off'}`} aria-hidden="true" />
                {visible(c.client_id)}{' '}
                <span class="muted client-state">
                  {c.connected
                    ? 'connected'
                    : c.in_grace
                      ? 'reconnecting'
                      : `last seen ${age(c.last_seen_at, now)} ago`}
                </span>
              </h2>
              {c.client_version !== undefined && <p class="muted">client {visible(c.client_version)}</p>}
              <p>
                <a href={`#/computers/${encodeURIComponent(c.client_id)}`}>Screen</a>
              </p>
              <details>
                <summary>{c.commands.length} commands</summary>
                <ul class="commands">
                  {c.commands.map((cmd) => (
                    <li key={cmd.name}>
                      <code>{visible(cmd.name)}</code>{' '}
                      {cmd.description !== undefined && (
                        <span class="muted">
                          <Line text={cmd.description} />
                        </span>
                      )}
                    </li>
                  ))}
                </ul>
              </details>
              <ToolTable tools={tools.filter((t) => t.client_id === c.client_id)} />
            </li>
          ))}
        </ul>
      )}
      {serverTools.length > 0 && (
        <details class="card">
          <summary>{serverTools.length} server tools (every computer's tasks may call them)</summary>
          <ul class="commands" aria-label="Server tools">
            {serverTools.map((t) => (
              <li key={t.name} data-server-tool={t.name}>
                <code>{visible(t.name)}</code>{' '}
                <span class="muted">
                  <Line text={t.description ?? ''} />
                  {t.timeout_ms !== undefined && ` · ${t.timeout_ms / 1000} s`}
                </span>
              </li>
            ))}
          </ul>
        </details>
      )}
      <ModelsPanel models={models} now={now} />
      <h2>Models and server</h2>
      {health === undefined ? (
        <p class="muted">Checking…</p>
      ) : (
        <div class="health">
          <p>
            Server {visible(health.version)}, up {Math.round(health.uptime_s)} s;{' '}
            {health.db.ok ? 'database ok' : `database NOT ok: ${health.db.error ?? ''}`} (
            <code>{visible(health.db.path)}</code>); {health.clients.connected} computer(s) connected.
          </p>
          {health.model_servers.map((s) => (
            <div class="card" key={s.url}>
              <h3>
                <span class={`dot ${s.reachable ? 'on' : 'off'}`} aria-hidden="true" />
                {visible(s.provider)} at <code>{visible(s.url)}</code>{' '}
                <span class="muted">
                  {s.reachable ? `reachable${s.version ? ` (version ${s.version})` : ''}` : 'not reachable'}
                </span>
              </h3>
              {!s.reachable && s.error !== undefined && <p class="error">{visible(s.error)}</p>}
              <ul class="models">
                {s.present.map((m) => (
                  <li key={m}>
                    <span class="badge s-completed">present</span> <code>{visible(m)}</code>
                  </li>
                ))}
                {s.missing.map((m) => (
                  <li key={m}>
                    <span class="badge s-failed">missing</span> <code>{visible(m)}</code> — install with{' '}
                    <code>ollama pull {visible(m)}</code>{' '}
                    <CopyButton text={`ollama pull ${m}`} label={`pull command for ${m}`} />
                  </li>
                ))}
              </ul>
            </div>
          ))}
        </div>
      )}
    </section>
  );
}

function ToolTable({ tools }: { tools: WireTool[] }) {
  if (tools.length === 0) return <p class="muted">No model-written tools.</p>;
  return (
    <table class="tools">
      <caption>Model-written tools</caption>
      <thead>
        <tr>
          <th scope="col">tool</th>
          <th scope="col">state</th>
          <th scope="col">version</th>
          <th scope="col">description</th>
        </tr>
      </thead>
      <tbody>
        {tools.map((t) => (
          <tr key={t.name}>
            <td>
              <code>{visible(t.name)}</code>
            </td>
            <td>
              <span class={`badge t-${t.status}`}>{visible(t.status)}</span>
            </td>
            <td>v{t.version}</td>
            <td>{t.description !== undefined ? <Line text={t.description} /> : ''}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
