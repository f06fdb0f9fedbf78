// The real agent host inside a real CC:Tweaked computer, against a scripted orchestrator over a real socket.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CC_CORE_COMMANDS, type ClientMessage } from '@ccagent/protocol';
import type { StartOptions } from './craftos.js';
import { HOST_PROGRAM } from './host-program.js';
import { Scenario, craftos } from './scenario.js';

type Obj = Record<string, unknown>;
const LUA_TEST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const LUA_SRC = path.resolve(LUA_TEST, '..', 'src');
type CommandResult = Extract<ClientMessage, { type: 'command_result' }>;
interface Result {
  ok: boolean;
  result: Obj;
  error: Obj;
}

describe.skipIf(!craftos)('agent host in CraftOS', () => {
  let s: Scenario;
  beforeEach(async () => {
    s = await Scenario.start();
  });
  afterEach(async () => {
    expect(await s.end()).toEqual([]); // every frame the client sent was protocol-valid
  });

  const boot = (opts: StartOptions = {}) => s.boot(HOST_PROGRAM, { args: [s.server.url], ...opts });
  const call = async (command: string, args: Obj = {}, callId?: string): Promise<Result> =>
    (await s.server.call(command, args, callId)) as unknown as Result;

  it('says hello with every core tool and its schema (guards: missing/invalid command registration)', async () => {
    boot();
    const hello = await s.server.hello();
    expect(hello.client_id).toBe('craftos-test');
    expect(hello.protocol_version).toBe(1);
    const names = hello.commands.map((c) => c.name);
    for (const n of ['shell_exec', 'fs_list', 'fs_read', 'fs_write', 'fs_delete', 'fs_move', 'run_program']) {
      expect(names).toContain(n);
    }
    for (const n of ['tool_create', 'tool_test', 'tool_set_status', 'tool_list', 'tools_reload']) {
      expect(names).toContain(n);
    }
    const schema = (n: string) => hello.commands.find((c) => c.name === n)?.args_schema as Obj;
    expect(schema('fs_read').required).toEqual(['path']);
    expect(schema('fs_write').required).toEqual(['path', 'content']);
    expect(schema('run_program').properties).toMatchObject({
      args: { type: 'array', items: { type: 'string' } },
    });
    expect(schema('tool_list').required).toEqual([]); // an empty list stays a JSON array
    expect(hello.tools).toEqual([]); // no model-written tools yet, announced as an empty registry
    const update = await s.server.waitFor((m) => m.type === 'tools_update');
    expect(update).toEqual({ type: 'tools_update', tools: [] });
  });

  it('registers exactly the core commands of @ccagent/protocol, and reserves the same names (one home)', async () => {
    // The host's reserved list (M.CORE, read under Debian's Lua 5.2) and what a real computer says in hello must
    // both be the protocol's CC_CORE_COMMANDS: a command added on one side only fails here.
    const lua = spawnSync(
      process.env.LUA ?? 'lua5.2',
      ['-e', 'io.write(table.concat(require("ccagent.host").CORE, ","))'],
      { encoding: 'utf8', env: { ...process.env, LUA_PATH: `${LUA_SRC}/?.lua;${LUA_TEST}/?.lua;;` } },
    );
    expect(lua.stderr).toBe('');
    expect(lua.stdout.split(',')).toEqual([...CC_CORE_COMMANDS]);
    boot();
    const hello = await s.server.hello();
    expect(hello.commands.map((c) => c.name).sort()).toEqual([...CC_CORE_COMMANDS].sort());
  });

  it('runs the file tools against the real fs (guards: wrong paths, lost content, crashes on errors)', async () => {
    const c = boot();
    await s.server.hello();
    const w = await call('fs_write', { path: '/work/notes.txt', content: 'héllo\nworld' });
    expect(w.ok).toBe(true);
    expect(readFileSync(path.join(c.disk, 'work', 'notes.txt'), 'utf8')).toBe('héllo\nworld');
    const a = await call('fs_write', { path: '/work/notes.txt', content: '!', append: true });
    expect(a.result).toEqual({ path: '/work/notes.txt', bytes: 1 });
    const r = await call('fs_read', { path: 'work/notes.txt' });
    expect(r.result.content).toBe('héllo\nworld!');
    const l = await call('fs_list', { path: '/work' });
    expect(l.result.entries).toEqual([{ name: 'notes.txt', is_dir: false, size: 13 }]);
    const empty = await call('fs_list', { path: '/work/none' });
    expect(empty.ok).toBe(false);
    expect(empty.error.code).toBe('not_found');
    const m = await call('fs_move', { from: '/work/notes.txt', to: '/archive/n.txt' });
    expect(m.result).toEqual({ from: '/work/notes.txt', to: '/archive/n.txt' });
    const d = await call('fs_delete', { path: '/archive/n.txt' });
    expect(d.result.deleted).toBe(true);
    const gone = await call('fs_read', { path: '/archive/n.txt' });
    expect(gone.error.code).toBe('not_found');
    const rom = await call('fs_write', { path: '/rom/x', content: '' });
    expect(rom.error.code).toBe('forbidden');
    const bad = await call('fs_write', { path: '/x.txt' });
    expect(bad.error).toMatchObject({ code: 'invalid_args', message: "'content' must be a string" });
  });

  it('shell_exec captures terminal output and the exit status (guards: output lost or leaked to screen)', async () => {
    const c = boot({
      files: {
        'hello.lua': 'for i = 1, 30 do print("line " .. i .. " " .. table.concat({...}, "+")) end',
        'bad.lua': 'print("before") error("exploded here")',
      },
    });
    await s.server.hello();
    const ok = await call('shell_exec', { command: 'hello a b' });
    expect(ok.result.ok).toBe(true);
    const lines = String(ok.result.output).split('\n');
    expect(lines).toHaveLength(30); // lines that scrolled off the 19-row screen are kept
    expect(lines[0]).toBe('line 1 a+b');
    expect(lines[29]).toBe('line 30 a+b');
    expect(c.stdout()).not.toContain('line 30 a+b'); // captured, not drawn on the real screen
    const bad = await call('shell_exec', { command: 'bad' });
    expect(bad.result.ok).toBe(false);
    expect(bad.result.output).toContain('before');
    expect(bad.result.output).toContain('exploded here');
    const missing = await call('shell_exec', { command: 'no_such_program' });
    expect(missing.result.ok).toBe(false);
    expect(missing.result.output).toContain('No such program');
  });

  it('run_program returns output and the error with a stack trace (guards: bare error strings)', async () => {
    boot({
      files: {
        'prog.lua': 'local a = ... print("got " .. a) local function inner() error("boom " .. a) end inner()',
        'fine.lua': 'print(select("#", ...))',
        'syntax.lua': 'local x = = 1',
      },
    });
    await s.server.hello();
    const r = await call('run_program', { path: '/prog.lua', args: ['x1'] });
    expect(r.ok).toBe(true);
    expect(r.result.ok).toBe(false);
    expect(r.result.output).toBe('got x1');
    expect(r.result.error).toContain('prog.lua:1: boom x1');
    expect(r.result.error).toContain('stack traceback');
    expect(r.result.error).toContain('inner');
    const f = await call('run_program', { path: 'fine', args: ['a', 'b', 'c'] });
    expect(f.result).toEqual({ ok: true, output: '3' });
    const syn = await call('run_program', { path: '/syntax.lua', args: [] });
    expect(syn.result.ok).toBe(false);
    expect(syn.result.error).toContain('syntax.lua:1');
    const none = await call('run_program', { path: '/nope.lua', args: [] });
    expect(none.error.code).toBe('not_found');
  });

  it('a sandbox root rejects escaping paths (guards: ../ breaking out of the sandbox)', async () => {
    const c = boot({ args: [s.server.url, '/sandbox'], files: { 'secret.txt': 'top secret' } });
    await s.server.hello();
    const esc = await call('fs_read', { path: '../secret.txt' });
    expect(esc.ok).toBe(false);
    expect(esc.error.code).toBe('forbidden');
    const abs = await call('fs_read', { path: '/secret.txt' });
    expect(abs.error.code).toBe('not_found'); // "/" means the sandbox root
    const mv = await call('fs_move', { from: '/a.txt', to: '../../x' });
    expect(mv.error.code).toBe('forbidden');
    const w = await call('fs_write', { path: '/a/b.txt', content: 'inside' });
    expect(w.result.path).toBe('/a/b.txt');
    expect(readFileSync(path.join(c.disk, 'sandbox', 'a', 'b.txt'), 'utf8')).toBe('inside');
  });

  it('a repeated call_id returns the stored result without running twice (guards: double side effects)', async () => {
    const c = boot();
    await s.server.hello();
    const first = await call('fs_write', { path: '/log.txt', content: 'x', append: true }, 'same-call');
    const again = await call('fs_write', { path: '/log.txt', content: 'x', append: true }, 'same-call');
    expect(again).toEqual(first);
    expect(readFileSync(path.join(c.disk, 'log.txt'), 'utf8')).toBe('x');
  });

  it('reconnects after the server drops it, says hello again and re-sends the unacked result', async () => {
    await s.restartServer({ autoAck: false });
    const c = boot();
    await s.server.hello();
    const r1 = await call('fs_write', { path: '/r.txt', content: 'once', append: true }, 'unacked-1');
    expect(r1.ok).toBe(true);
    const before = s.server.received.length;
    s.server.drop();
    const hello2 = await s.server.hello(2);
    expect(hello2.commands.length).toBeGreaterThan(6);
    const resent = await s.server.waitFor<CommandResult>(
      (m) => m.type === 'command_result' && m.call_id === 'unacked-1',
      15_000,
      before,
    );
    expect(resent).toMatchObject({ ok: true, result: { path: '/r.txt', bytes: 4 } });
    expect(s.server.connections).toBe(2);
    // a call repeated by the restarted server is not run twice
    await call('fs_write', { path: '/r.txt', content: 'once', append: true }, 'unacked-1');
    expect(readFileSync(path.join(c.disk, 'r.txt'), 'utf8')).toBe('once');
    const r2 = await call('fs_read', { path: '/r.txt' });
    expect(r2.result.content).toBe('once');
  });

  it('a computer rebooted before the ack re-sends the result and never re-runs the call (chunk unload)', async () => {
    await s.restartServer({ autoAck: false });
    const data = mkdtempSync(path.join(tmpdir(), 'ccagent-reboot-'));
    try {
      const first = boot({ dataDir: data });
      await s.server.hello();
      await call('fs_write', { path: '/r.txt', content: 'once', append: true }, 'before-reboot');
      await first.stop(); // the chunk unloads: the computer is gone without a goodbye
      const second = boot({ dataDir: data });
      const before = s.server.received.length;
      await s.server.hello(2);
      const resent = await s.server.waitFor<CommandResult>(
        (m) => m.type === 'command_result' && m.call_id === 'before-reboot',
        15_000,
        before,
      );
      expect(resent.ok).toBe(true);
      await call('fs_write', { path: '/r.txt', content: 'once', append: true }, 'before-reboot');
      expect(readFileSync(path.join(second.disk, 'r.txt'), 'utf8')).toBe('once');
    } finally {
      rmSync(data, { recursive: true, force: true });
    }
  });

  it('a >128 KiB fs_read result goes out chunked and reassembles exactly (guards: oversized frames)', async () => {
    const big = Array.from({ length: 8000 }, (_, i) => `line ${i} "quoted" \\ tab\t é\n`).join('');
    expect(Buffer.byteLength(big)).toBeGreaterThan(200 * 1024);
    boot({ files: { 'big.txt': big } });
    await s.server.hello();
    const r = await call('fs_read', { path: '/big.txt' });
    expect(r.result.content).toBe(big);
    expect(r.result.size).toBe(Buffer.byteLength(big));
    const chunkFrames = s.server.frames.filter((f) => f.includes('"type":"chunk"'));
    expect(chunkFrames.length).toBeGreaterThanOrEqual(2);
    for (const f of s.server.frames) expect(Buffer.byteLength(f)).toBeLessThanOrEqual(131072);
  });

  it('accepts a >128 KiB fs_write the server sends as chunk frames', async () => {
    const c = boot();
    await s.server.hello();
    const content = 'abcdefghij'.repeat(20_000) + ' ünïcødé 🚀';
    const r = await call('fs_write', { path: '/big-in.txt', content }, 'big-write');
    expect(r.ok).toBe(true);
    expect(readFileSync(path.join(c.disk, 'big-in.txt'), 'utf8')).toBe(content);
  });

  it('survives garbage frames and keeps serving (guards: one bad frame killing the host)', async () => {
    boot();
    await s.server.hello();
    s.server.sendRaw('this is not json');
    s.server.sendRaw('{"type":"command_call","call_id":42}');
    s.server.sendRaw('{"type":"who_knows"}');
    s.server.sendRaw('{"type":"chunk","chunk_id":"x","index":3,"count":2,"data":""}');
    const r = await call('fs_list', { path: '/' });
    expect(r.ok).toBe(true);
    expect(s.server.connections).toBe(1);
  });

  it('answers ping with pong', async () => {
    boot();
    await s.server.hello();
    s.server.send({ type: 'ping', id: 'hb-1' });
    const pong = await s.server.waitFor((m) => m.type === 'pong');
    expect(pong).toEqual({ type: 'pong', id: 'hb-1' });
  });
  // A program that never ends by itself: it bumps a counter file every 50 ms. `raw` swallows `terminate` (it waits
  // with os.pullEventRaw), like a program written to ignore Ctrl+T.
  const LOOP = (raw: boolean) =>
    `local n = 0
     while true do
       n = n + 1
       local h = fs.open("/count.txt", "w") h.write(tostring(n)) h.close()
       local t = os.startTimer(0.05)
       repeat local e, id = ${raw ? 'os.pullEventRaw()' : 'os.pullEvent()'} until e == "timer" and id == t
     end`;

  const readCount = (disk: string): number => Number(readFileSync(path.join(disk, 'count.txt'), 'utf8'));

  /** Start `command` with `args`, wait until the loop has counted past 3, cancel it; returns what the client did. */
  const cancelWhileLooping = async (disk: string, command: string, args: Obj, callId: string) => {
    const from = s.server.received.length;
    s.server.send({ type: 'command_call', task_id: 'task-0', call_id: callId, command, args });
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      try {
        if (readCount(disk) > 3) break;
      } catch {
        // not written yet
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    const sentAt = Date.now();
    s.server.send({ type: 'command_cancel', task_id: 'task-0', call_id: callId, reason: 'task cancelled' });
    const result = await s.server.waitFor<CommandResult>(
      (m) => m.type === 'command_result' && m.call_id === callId,
      15_000,
      from,
    );
    const answeredMs = Date.now() - sentAt;
    const countAtAnswer = readCount(disk);
    await new Promise((r) => setTimeout(r, 600)); // twelve loop periods: a survivor would have counted on
    const results = s.server.received
      .slice(from)
      .filter((m) => m.type === 'command_result' && m.call_id === callId);
    return { result, answeredMs, countAtAnswer, countLater: readCount(disk), results: results.length };
  };

  it('command_cancel stops run_program in an endless loop within a second and answers once (guards: cancel never reaching the computer)', async () => {
    const c = boot({ files: { 'loop.lua': LOOP(false) } });
    await s.server.hello();
    const r = await cancelWhileLooping(c.disk, 'run_program', { path: '/loop.lua' }, 'loop-1');
    expect(r.result).toMatchObject({ ok: false, error: { code: 'cancelled', message: 'task cancelled' } });
    expect(r.answeredMs).toBeLessThan(1000);
    expect(r.countLater).toBe(r.countAtAnswer); // nothing of the program runs afterwards
    expect(r.results).toBe(1);
    // the host keeps serving, and its terminal was restored (a later command's output is captured as usual)
    const after = await call('shell_exec', { command: 'echo' });
    expect(after.ok).toBe(true);
  });

  it('command_cancel stops a shell_exec loop and a program that swallows terminate (guards: pullEventRaw loops running on)', async () => {
    const c = boot({ files: { 'loop.lua': LOOP(false), 'stubborn.lua': LOOP(true) } });
    await s.server.hello();
    const sh = await cancelWhileLooping(c.disk, 'shell_exec', { command: 'loop' }, 'loop-sh');
    expect(sh.result).toMatchObject({ ok: false, error: { code: 'cancelled' } });
    expect(sh.countLater).toBe(sh.countAtAnswer);
    expect(sh.results).toBe(1);
    const raw = await cancelWhileLooping(c.disk, 'run_program', { path: '/stubborn.lua' }, 'loop-raw');
    expect(raw.result).toMatchObject({ ok: false, error: { code: 'cancelled' } });
    expect(raw.answeredMs).toBeLessThan(1000);
    expect(raw.countLater).toBe(raw.countAtAnswer);
    expect(raw.results).toBe(1);
    // a cancel for a call that already finished (or never existed) changes nothing and is not answered
    const from = s.server.received.length;
    s.server.send({ type: 'command_cancel', task_id: 'task-0', call_id: 'loop-raw', reason: 'again' });
    s.server.send({ type: 'command_cancel', task_id: 'task-0', call_id: 'nope', reason: 'unknown' });
    const ping = await call('computer_info');
    expect(ping.result).toMatchObject({ computer_id: 0 });
    expect(s.server.received.slice(from).filter((m) => m.type === 'command_result')).toHaveLength(1);
  });

  it('offers the built-ins computer_time and computer_info, and none named like the orchestrator’s server-side tools (guards: the seed 004 names clashing)', async () => {
    boot();
    const hello = await s.server.hello();
    const names = hello.commands.map((c) => c.name);
    for (const n of ['computer_time', 'computer_info']) expect(names).toContain(n);
    // echo, get_time and get_system_info are the orchestrator's (seed 004): a computer offering them is refused
    for (const n of ['echo', 'get_time', 'get_system_info']) expect(names).not.toContain(n);
    const before = Date.now();
    const t = await call('computer_time');
    expect(Math.abs(Number(t.result.epoch_ms) - before)).toBeLessThan(60_000);
    expect(t.result.time).toBeGreaterThanOrEqual(0);
    expect(t.result.time).toBeLessThan(24);
    const i = await call('computer_info');
    expect(i.result).toMatchObject({ computer_id: 0, kind: 'computer', root: '/' });
    expect(String(i.result.os_version)).toMatch(/^CraftOS/);
    expect(i.result.tools_dir).toBe('/tools');
    expect(Number(i.result.free_space)).toBeGreaterThan(0);
  });
});
