/**
 * The end-of-run checks of the crash suites (kill -9 of one server, failover between two): after every task
 * completed, compare what the simulated computers did and were told with what the server serves. Guards against an
 * acknowledged task, call or result lost, a command executed twice (also under two call ids for one logical
 * command, or one call id on two computers), and a duplicated task from a re-sent `create_task`.
 */
import { expect } from 'vitest';
import type { Server } from './server.js';
import type { SimClient } from './sim-client.js';

interface CallRow {
  call_id: string;
  command: string;
  args: { path?: string };
  status: string;
  outcome?: { ok: boolean; result?: unknown };
  dispatch_count: number;
}
interface Detail {
  task: { id: string; status: string; result?: { message?: string }; error?: unknown };
  command_calls: CallRow[];
  history: Array<{ type: string; call_id?: string; outcome?: { ok: boolean; result?: unknown } }>;
}

/** What {@link verifyRun} counted. */
export interface RunCounts {
  tasks: number;
  executions: number;
  /** Calls a computer received more than once (re-sent after a crash; answered from its stored result). */
  redeliveries: number;
  /** Calls the server dispatched more than once. */
  redispatched: number;
  /** Logical commands executed under more than one call id, or one call id executed twice: must be 0. */
  duplicates: number;
}

/**
 * Check a finished run of `jobScript` tasks (`steps` tool calls each, markers `/<tag>/<n>`): `clients` created tasks
 * over the WebSocket, `unbound` maps the request ids of tasks created over HTTP to their task ids.
 */
export async function verifyRun(
  server: Server,
  clients: SimClient[],
  unbound: Map<string, string>,
  steps: number,
): Promise<RunCounts> {
  const details = new Map<string, Detail>();
  let expected = unbound.size;
  for (const created of [...clients.map((c) => c.created), unbound]) {
    if (created !== unbound) expected += created.size;
    for (const [rid, taskId] of created) {
      const res = await server.http(`/api/tasks/${taskId}`);
      expect(res.status, `acknowledged task ${taskId} (${rid}) is missing`).toBe(200);
      details.set(taskId, (await res.json()) as Detail);
    }
  }
  // One task per request id, whatever was re-sent.
  expect(details.size).toBe(expected);
  const listed = (await (await server.http('/api/tasks?limit=1000')).json()) as { total: number };
  expect(listed.total, 'tasks nobody asked for (a re-sent create_task made twice)').toBe(expected);

  const dbCalls = new Map<string, CallRow & { taskId: string }>();
  for (const [taskId, d] of details) {
    const tag = /(?:pc-\d+|free)-t\d+/.exec(d.task.result?.message ?? '')?.[0];
    expect(d.task.status, JSON.stringify(d.task)).toBe('completed');
    expect(d.task.result?.message).toBe(`finished ${tag}`);
    // Exactly the scripted calls, in order, each once, each succeeded.
    expect(d.command_calls.map((c) => c.args.path)).toEqual(
      Array.from({ length: steps }, (_, n) => `/${tag}/${n}`),
    );
    for (const c of d.command_calls) {
      expect(c.status).toBe('succeeded');
      dbCalls.set(c.call_id, { ...c, taskId });
    }
    // The history saw every result once.
    const results = d.history.filter((h) => h.type === 'tool_result');
    expect(results.map((h) => h.call_id)).toEqual(d.command_calls.map((c) => c.call_id));
  }

  const executedBy = new Map<string, string>();
  const markers = new Map<string, Set<string>>();
  let executions = 0;
  let redeliveries = 0;
  for (const c of clients) {
    for (const e of c.executions) {
      executions++;
      // The same call_id never runs on two computers.
      expect(executedBy.get(e.callId) ?? c.clientId).toBe(c.clientId);
      executedBy.set(e.callId, c.clientId);
      const marker = (e.args as { path: string }).path;
      const set = markers.get(marker) ?? new Set<string>();
      set.add(e.callId);
      markers.set(marker, set);
      // Every call a client was sent exists on disk with the same result the client gave.
      const row = dbCalls.get(e.callId);
      expect(row, `call ${e.callId} was sent but is not in the database`).toBeDefined();
      expect(row?.outcome?.result).toEqual(e.result);
    }
    for (const [callId, n] of c.callsSeen) {
      expect(dbCalls.has(callId), `call ${callId} announced but lost`).toBe(true);
      redeliveries += n - 1;
    }
    for (const callId of c.acked) expect(dbCalls.get(callId)?.status).toBe('succeeded');
  }
  // No logical command (marker) was executed under two call_ids.
  const duplicated = [...markers].filter(([, ids]) => ids.size > 1);
  expect(duplicated).toEqual([]);
  expect(executions).toBe(expected * steps);
  return {
    tasks: expected,
    executions,
    redeliveries,
    redispatched: [...dbCalls.values()].filter((c) => c.dispatch_count > 1).length,
    duplicates: duplicated.length,
  };
}
