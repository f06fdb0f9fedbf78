import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defaultDbPath } from './paths.js';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import * as schema from './schema.js';
import { openSqliteStore, stepsPageQuery, type SqliteStore } from './sqlite-store.js';
import { isStoreError } from '@ccagent/store-core';
import { newTask, tempDir } from '../test/support/test-helpers.js';

let dir: string;
let cleanup: () => void;
let store: SqliteStore;
beforeEach(() => {
  ({ dir, cleanup } = tempDir());
  store = openSqliteStore({ path: path.join(dir, 'q.db') });
});
afterEach(async () => {
  await store.close();
  cleanup();
});

describe('listTasksPage', () => {
  beforeEach(async () => {
    for (let i = 1; i <= 7; i++) {
      await store.commit({
        task: newTask(`t${i}`, {
          createdAt: i * 10,
          status: i % 2 ? 'queued' : 'completed',
          kind: i <= 3 ? 'a' : 'b',
          clientId: i === 5 ? 'pc-5' : null,
        }),
        create: true,
      });
    }
  });

  it('pages newest first by default with the total of all matches (guards against a CLI list missing its newest tasks)', async () => {
    const p1 = await store.listTasksPage({ limit: 3 });
    expect(p1.total).toBe(7);
    expect(p1.tasks.map((t) => t.id)).toEqual(['t7', 't6', 't5']);
    const p3 = await store.listTasksPage({ limit: 3, offset: 6 });
    expect(p3.tasks.map((t) => t.id)).toEqual(['t1']);
    expect((await store.listTasksPage({ order: 'oldest', limit: 2 })).tasks.map((t) => t.id)).toEqual([
      't1',
      't2',
    ]);
  });

  it('filters by status (one or many), kind and client, and counts only matches', async () => {
    expect(await store.listTasksPage({ status: 'completed' })).toMatchObject({ total: 3 });
    expect((await store.listTasksPage({ status: ['completed'], kind: 'a' })).tasks.map((t) => t.id)).toEqual([
      't2',
    ]);
    expect((await store.listTasksPage({ clientId: 'pc-5' })).tasks.map((t) => t.id)).toEqual(['t5']);
    expect(await store.listTasksPage({ kind: 'zzz' })).toEqual({ tasks: [], total: 0 });
  });

  it('searches by id prefix or prompt words, with the other filters (guards against a dashboard search that only sees the loaded page)', async () => {
    await store.commit({
      task: newTask('zz-fix', { createdAt: 80, prompt: 'Fix the broken TODO.lua, then RUN it', kind: 'b' }),
      create: true,
    });
    expect((await store.listTasksPage({ search: 'todo.lua' })).tasks.map((t) => t.id)).toEqual(['zz-fix']);
    expect((await store.listTasksPage({ search: 'zz-' })).total).toBe(1);
    expect((await store.listTasksPage({ search: 'prompt t' })).total).toBe(7);
    expect((await store.listTasksPage({ search: 'prompt t', kind: 'a' })).total).toBe(3);
    expect((await store.listTasksPage({ search: 'fix', kind: 'a' })).total).toBe(0);
    // LIKE wildcards in the text are plain characters.
    expect((await store.listTasksPage({ search: '%' })).total).toBe(0);
  });

  it('rejects a bad limit/offset/order with invalid_input (guards against unbounded or nonsense queries from HTTP)', async () => {
    for (const q of [
      { limit: 0 },
      { limit: 1001 },
      { limit: 1.5 },
      { offset: -1 },
      { order: 'up' as 'newest' },
    ]) {
      const err = await store.listTasksPage(q).catch((e: unknown) => e);
      expect(isStoreError(err, 'invalid_input'), JSON.stringify(q)).toBe(true);
    }
  });
});

describe('clients', () => {
  it('upserts a client, keeps firstSeenAt, replaces commands, and tracks connection (guards against losing when a computer was first seen)', async () => {
    await store.upsertClient({
      clientId: 'pc-1',
      commands: [{ name: 'fs_read', timeoutMs: 5000 }],
      connected: true,
      seenAt: 100,
      clientVersion: '1.0',
    });
    await store.upsertClient({
      clientId: 'pc-1',
      commands: [{ name: 'shell_exec' }],
      connected: true,
      seenAt: 200,
    });
    await store.setClientConnected('pc-1', false, 300);
    await store.upsertClient({ clientId: 'pc-0', commands: [], connected: false, seenAt: 50 });
    expect(await store.listClients()).toEqual([
      { clientId: 'pc-0', commands: [], connected: false, firstSeenAt: 50, lastSeenAt: 50 },
      {
        clientId: 'pc-1',
        commands: [{ name: 'shell_exec' }],
        connected: false,
        clientVersion: '1.0',
        firstSeenAt: 100,
        lastSeenAt: 300,
      },
    ]);
  });

  it('remembers the credential a client last connected with, across sightings that omit it (a computer offline keeps its key group)', async () => {
    await store.upsertClient({
      clientId: 'host',
      commands: [],
      connected: true,
      seenAt: 1,
      connectedWith: 'token',
    });
    await store.setClientConnected('host', false, 2);
    await store.upsertClient({ clientId: 'host', commands: [], connected: true, seenAt: 3 });
    expect((await store.listClients())[0]?.connectedWith).toBe('token');
    await store.upsertClient({
      clientId: 'host',
      commands: [],
      connected: true,
      seenAt: 4,
      connectedWith: 'key_1',
    });
    expect((await store.listClients())[0]?.connectedWith).toBe('key_1');
    const bad = await store
      .upsertClient({ clientId: 'host', commands: [], connected: true, seenAt: 5, connectedWith: '' })
      .catch((e: unknown) => e);
    expect(isStoreError(bad, 'invalid_input')).toBe(true);
    expect((await store.listClients())[0]?.connectedWith).toBe('key_1');
  });

  it('rejects unknown clients and bad input with typed errors, writing nothing', async () => {
    expect(
      isStoreError(
        await store.setClientConnected('ghost', true, 1).catch((e: unknown) => e),
        'client_not_found',
      ),
    ).toBe(true);
    const bad = await store
      .upsertClient({ clientId: '', commands: [], connected: true, seenAt: 1 })
      .catch((e: unknown) => e);
    expect(isStoreError(bad, 'invalid_input')).toBe(true);
    const bad2 = await store
      .upsertClient({ clientId: 'x', commands: [{ name: '' }], connected: true, seenAt: 1 })
      .catch((e: unknown) => e);
    expect(isStoreError(bad2, 'invalid_input')).toBe(true);
    expect(await store.listClients()).toEqual([]);
  });
});

describe('model tools registry', () => {
  beforeEach(async () => {
    await store.upsertClient({ clientId: 'pc-1', commands: [], connected: true, seenAt: 1 });
    await store.upsertClient({ clientId: 'pc-2', commands: [], connected: true, seenAt: 1 });
  });

  it("replaces one client's tools atomically and leaves other clients' tools alone (guards against a stale registry)", async () => {
    await store.replaceClientTools(
      'pc-1',
      [
        {
          name: 'mine',
          status: 'active',
          version: 2,
          description: 'dig a tunnel',
          file: '/tools/mine.lua',
          updatedAt: 9,
        },
        { name: 'old', status: 'retired', version: 1 },
      ],
      10,
    );
    await store.replaceClientTools('pc-2', [{ name: 'farm', status: 'draft', version: 0 }], 11);
    await store.replaceClientTools('pc-1', [{ name: 'mine', status: 'active', version: 3 }], 12);
    expect(await store.listTools()).toEqual([
      { clientId: 'pc-1', name: 'mine', status: 'active', version: 3, recordedAt: 12 },
      { clientId: 'pc-2', name: 'farm', status: 'draft', version: 0, recordedAt: 11 },
    ]);
    expect((await store.listTools({ status: 'draft' })).map((t) => t.name)).toEqual(['farm']);
    expect((await store.listTools({ clientId: 'pc-1', status: 'retired' })).map((t) => t.name)).toEqual([]);
    await store.replaceClientTools('pc-1', [], 13);
    expect((await store.listTools({ clientId: 'pc-1' })).length).toBe(0);
  });

  it('rejects an unknown client, a duplicate name, a bad status or version, and keeps the previous registry (guards against half-applied updates)', async () => {
    await store.replaceClientTools('pc-1', [{ name: 'keep', status: 'test', version: 1 }], 5);
    const cases: Array<[string, unknown[], string]> = [
      ['ghost', [], 'client_not_found'],
      [
        'pc-1',
        [
          { name: 'a', status: 'active', version: 1 },
          { name: 'a', status: 'draft', version: 1 },
        ],
        'invalid_input',
      ],
      ['pc-1', [{ name: 'a', status: 'live', version: 1 }], 'invalid_input'],
      ['pc-1', [{ name: 'a', status: 'active', version: -1 }], 'invalid_input'],
      ['pc-1', [{ name: '', status: 'active', version: 1 }], 'invalid_input'],
    ];
    for (const [client, tools, code] of cases) {
      const err = await store
        .replaceClientTools(client, tools as Parameters<SqliteStore['replaceClientTools']>[1], 6)
        .catch((e: unknown) => e);
      expect(isStoreError(err, code as 'invalid_input'), `${client} ${JSON.stringify(tools)}`).toBe(true);
    }
    expect(await store.listTools()).toEqual([
      { clientId: 'pc-1', name: 'keep', status: 'test', version: 1, recordedAt: 5 },
    ]);
  });
});

describe('task updates', () => {
  it('an update that changes the client, kind or creation time writes them and their indexes (guards against the state-only UPDATE of the commit path dropping a change)', async () => {
    await store.commit({ task: newTask('mv', { clientId: 'pc-1', kind: 'a' }), create: true });
    await store.commit({
      task: newTask('mv', { clientId: 'pc-1', kind: 'a', status: 'running', updatedAt: 2 }),
    });
    expect((await store.listTasks({ clientId: 'pc-1' })).map((t) => t.id)).toEqual(['mv']);
    await store.commit({
      task: newTask('mv', { clientId: 'pc-2', kind: 'b', createdAt: 7, status: 'running', updatedAt: 3 }),
    });
    expect(await store.getTask('mv')).toMatchObject({
      clientId: 'pc-2',
      kind: 'b',
      createdAt: 7,
      updatedAt: 3,
    });
    expect(await store.listTasks({ clientId: 'pc-1' })).toEqual([]);
    expect((await store.listTasks({ clientId: 'pc-2', kind: 'b' })).map((t) => t.id)).toEqual(['mv']);
    const db = new Database(store.path, { readonly: true });
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    db.close();
  });
});

describe('step-log pages', () => {
  it('are answered from the (task_id, seq) primary key, not a scan plus sort (guards against a follower of a long task reading its whole log every poll)', () => {
    const db = new Database(store.path, { readonly: true });
    const { sql: text } = stepsPageQuery(drizzle(db, { schema })).toSQL();
    const plan = (db.prepare(`EXPLAIN QUERY PLAN ${text}`).all('t', 10, 5) as Array<{ detail: string }>)
      .map((r) => r.detail)
      .join('\n');
    db.close();
    expect(plan).toMatch(
      /SEARCH steps USING (INDEX sqlite_autoindex_steps_1|PRIMARY KEY) \(task_id=\? AND seq>\?\)/,
    );
    expect(plan).not.toMatch(/TEMP B-TREE/);
  });

  it('page a long log on a read-only connection while the writer appends (guards against the CLI follow path missing or repeating records)', async () => {
    await store.commit({ task: newTask('long'), create: true });
    await Promise.all(
      Array.from({ length: 300 }, (_, i) =>
        store.appendStep('long', { kind: 'note', output: i, step: i, at: i }),
      ),
    );
    const reader = openSqliteStore({ path: store.path, readonly: true });
    const seen: number[] = [];
    let after = 0;
    for (;;) {
      const page = await reader.getSteps('long', { afterSeq: after, limit: 64 });
      if (page.length === 0) break;
      expect(page.length).toBeLessThanOrEqual(64);
      seen.push(...page.map((s) => s.seq));
      after = page[page.length - 1]!.seq;
      if (seen.length === 128)
        await store.appendStep('long', { kind: 'note', output: 300, step: 300, at: 300 });
    }
    expect(seen).toEqual(Array.from({ length: 301 }, (_, i) => i + 1));
    await reader.close();
  });
});

describe('durability and failure reporting', () => {
  it('a resolved commit is visible to a separate connection (guards against acknowledging before the transaction commits)', async () => {
    const other = new Database(store.path, { readonly: true });
    const count = () => (other.prepare('SELECT count(*) AS n FROM steps').get() as { n: number }).n;
    await store.commit({ task: newTask('d'), create: true });
    const pending = Promise.all(
      Array.from({ length: 5 }, (_, i) => store.appendStep('d', { kind: 'note', step: 1, at: i })),
    );
    expect(count()).toBe(0); // queued, not yet committed: not acknowledged either
    await pending;
    expect(count()).toBe(5);
    other.close();
  });

  it('fails health and rejects calls after close (guards against silently writing to a closed store)', async () => {
    await store.close();
    expect(store.checkHealth()).toEqual({ ok: false, error: 'store is closed', code: 'closed' });
    const err = await store.getTask('x').catch((e: unknown) => e);
    expect((err as { code?: string }).code).toBe('store_failure');
    const err2 = await store
      .upsertClient({ clientId: 'c', commands: [], connected: true, seenAt: 1 })
      .catch((e: unknown) => e);
    expect(isStoreError(err2, 'closed')).toBe(true);
  });

  it('close() commits writes that were queued but not yet flushed (guards against losing acknowledged-soon writes on shutdown)', async () => {
    await store.commit({ task: newTask('late'), create: true });
    const p = store.appendStep('late', { kind: 'note', step: 1, at: 1 });
    await store.close();
    expect((await p).seq).toBe(1);
    const again = openSqliteStore({ path: store.path, readonly: true });
    expect(await again.getSteps('late')).toHaveLength(1);
    await again.close();
  });
});

describe('defaultDbPath', () => {
  it('honours CCAGENT_DB, then CCAGENT_DATA_DIR, then the per-user data dir', () => {
    expect(defaultDbPath({ CCAGENT_DB: '/tmp/x/my.db' })).toBe('/tmp/x/my.db');
    expect(defaultDbPath({ CCAGENT_DATA_DIR: '/srv/cc' })).toBe('/srv/cc/ccagent.db');
    const p = defaultDbPath({ HOME: '/home/u', XDG_DATA_HOME: '/home/u/.data' });
    expect(path.basename(p)).toBe('ccagent.db');
    expect(path.basename(path.dirname(p))).toBe('ccagent');
  });
});
