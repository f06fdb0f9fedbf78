/**
 * `ccagent clients enroll | pending | approve | deny | revoke | rotate | keys` and `ccagent audit`: the operator's side of per-computer keys.
 * They go through the running orchestrator (it holds the keys in memory and closes a revoked computer's socket);
 * `audit --db` reads the log from the SQLite file instead.
 */
import {
  PairingDecisionResponseSchema,
  PairingsResponseSchema,
  AuditResponseSchema,
  CreateKeyResponseSchema,
  CredentialsResponseSchema,
  EnrollResponseSchema,
  RevokeResponseSchema,
  RotateResponseSchema,
  type HttpAuditEntry,
} from '@ccagent/protocol';
import { openSqliteStore } from '@ccagent/store';
import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { CliError } from './errors.js';
import { HttpTaskSource } from './http-source.js';

/** What the commands need from the program. */
export interface SecurityCommandDeps {
  /** The orchestrator base URL and token (`--url`, `--token`); throws a usage error with `--db`. */
  admin(what: string): { url: string; token?: string };
  /** The SQLite file when `--db` was given. */
  dbPath(): string | undefined;
  json(): boolean;
  /**
   * What a line printed here is given of a record from the server or the database: every string inert, newlines
   * included (each record is one line), unless `--raw` or `--json`. A pairing request's client id is the asking
   * computer's choice, an audit row's target may be too.
   */
  view<T>(value: T): T;
  print(text: string): void;
  printJson(value: unknown): void;
}

// The bodies are @ccagent/protocol's: one shape per record, shared with the server that answers them.
const enrolled = EnrollResponseSchema;
const revoked = RevokeResponseSchema;
const rotated = RotateResponseSchema;
const created = CreateKeyResponseSchema;
const credentials = CredentialsResponseSchema;
const audit = AuditResponseSchema;

const positive = (value: string): number => {
  if (!/^\d+$/.test(value) || Number(value) < 1)
    throw new InvalidArgumentError('expected a whole number ≥ 1');
  return Number(value);
};
const list = (value: string): string[] =>
  value
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);

const time = (ms: number): string =>
  new Date(ms)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, 'Z');

/** Add the security subcommands to `clients` and the `audit` command to `program`. */
export function addSecurityCommands(program: Command, clients: Command, d: SecurityCommandDeps): void {
  const client = (what: string): HttpTaskSource => new HttpTaskSource(d.admin(what));

  clients
    .command('enroll')
    .description(
      'issue a short-lived, single-use enrollment code for a computer (it trades it for its own key)',
    )
    .option('--name <id>', 'the client id the computer will have (default: it names itself)')
    .option('--kinds <kinds>', 'task kinds it may create (comma-separated; default: any)', list)
    .option('--observe-others', 'it may read and follow tasks of other computers')
    .option('--ttl <seconds>', 'how long the code is valid (default: the server setting, 15 min)', positive)
    .action(async (o: { name?: string; kinds?: string[]; observeOthers?: boolean; ttl?: number }) => {
      const c = client('clients enroll');
      const r = await c.call(enrolled, 'POST', '/api/credentials/enroll', {
        ...(o.name !== undefined ? { client_id: o.name } : {}),
        ...(o.kinds !== undefined ? { kinds: o.kinds } : {}),
        ...(o.observeOthers ? { observe_others: true } : {}),
        ...(o.ttl !== undefined ? { ttl_s: o.ttl } : {}),
      });
      if (d.json()) return d.printJson(r);
      const base = c.label;
      d.print(
        [
          `enrollment code ${r.code} (single use, valid until ${time(r.expires_at)})`,
          `on the computer: wget run ${base}/lua/install.lua --code ${r.code}${o.name !== undefined ? ` --id ${o.name}` : ''}`,
          '',
        ].join('\n'),
      );
    });

  clients
    .command('pending')
    .description(
      'computers that asked to pair (install.lua --pair) and wait for approve or deny; --all: also decided ones',
    )
    .option('--all', 'also approved, denied, collected and expired requests')
    .action(async (o: { all?: boolean }) => {
      const r = await client('clients pending').call(
        PairingsResponseSchema,
        'GET',
        '/api/credentials/pairings',
      );
      const shown = o.all ? r.pairings : r.pairings.filter((p) => p.state === 'pending');
      if (d.json()) return d.printJson({ pairings: shown });
      for (const p of d.view(shown)) {
        d.print(
          `${p.id}  ${p.client_id.padEnd(20)} match ${p.match}  ${p.state.padEnd(9)} from ${p.source}  asked ${time(p.created_at)}\n`,
        );
      }
      if (shown.length === 0) d.print(o.all ? 'no pairing requests\n' : 'no computer waits for approval\n');
    });

  clients
    .command('approve')
    .description(
      'approve a pairing request (check that its match code is the one the computer shows); the computer then gets its key',
    )
    .argument('<request>', 'request id (pair_…) from clients pending')
    .option('--kinds <kinds>', 'task kinds it may create (comma-separated; default: any)', list)
    .option('--observe-others', 'it may read and follow tasks of other computers')
    .action(async (id: string, o: { kinds?: string[]; observeOthers?: boolean }) => {
      const r = await client('clients approve').call(
        PairingDecisionResponseSchema,
        'POST',
        '/api/credentials/pairings/approve',
        {
          id,
          ...(o.kinds !== undefined ? { kinds: o.kinds } : {}),
          ...(o.observeOthers ? { observe_others: true } : {}),
        },
      );
      if (d.json()) return d.printJson(r);
      const p = d.view(r.pairing);
      d.print(`approved ${p.client_id} (${d.view(id)}, match ${p.match}); it collects its key now\n`);
    });

  clients
    .command('deny')
    .description('deny a pairing request; the computer is told and gets no key')
    .argument('<request>', 'request id (pair_…) from clients pending')
    .action(async (id: string) => {
      const r = await client('clients deny').call(
        PairingDecisionResponseSchema,
        'POST',
        '/api/credentials/pairings/deny',
        { id },
      );
      if (d.json()) return d.printJson(r);
      d.print(`denied ${d.view(r.pairing.client_id)} (${d.view(id)})\n`);
    });

  clients
    .command('revoke')
    .description(
      "revoke a computer's keys (client id) or one key (credential id cred_…); its socket closes at once",
    )
    .argument('<id>', 'client id or credential id')
    .action(async (id: string) => {
      const r = await client('clients revoke').call(
        revoked,
        'POST',
        '/api/credentials/revoke',
        id.startsWith('cred_') ? { id } : { client_id: id },
      );
      if (d.json()) return d.printJson(r);
      for (const c of d.view(r.revoked))
        d.print(`revoked ${c.id}${c.client_id !== undefined ? ` (${c.client_id})` : ''}\n`);
    });

  clients
    .command('rotate')
    .description(
      'give a computer a new key; the old one keeps working for the overlap (server setting, 24 h)',
    )
    .argument('<client>', 'client id')
    .action(async (id: string) => {
      const r = await client('clients rotate').call(rotated, 'POST', '/api/credentials/rotate', {
        client_id: id,
      });
      if (d.json()) return d.printJson(r);
      d.print(
        [
          `new key for ${d.view(id)}: ${r.key}`,
          `(shown once; the old key works until ${time(r.old_valid_until)})`,
          `on the computer: ccagent-host --token ${r.key}   (or set "token" in /.ccagent/config.json)`,
          '',
        ].join('\n'),
      );
    });

  clients
    .command('keys')
    .description('every key: role, client, state (hashes only are stored; keys are shown once when made)')
    .option('--create <role>', 'make a key for a person or tool instead: viewer (read-only) or operator')
    .option('--name <name>', 'with --create: what the key is for')
    .action(async (o: { create?: string; name?: string }) => {
      const c = client('clients keys');
      if (o.create !== undefined) {
        if (o.create !== 'viewer' && o.create !== 'operator')
          throw new CliError('usage', '--create: viewer or operator');
        const r = await c.call(created, 'POST', '/api/credentials/keys', {
          role: o.create,
          ...(o.name !== undefined ? { name: o.name } : {}),
        });
        if (d.json()) return d.printJson(r);
        d.print(`${o.create} key ${r.credential.id}: ${r.key}\n(shown once)\n`);
        return;
      }
      const r = await c.call(credentials, 'GET', '/api/credentials');
      if (d.json()) return d.printJson(r);
      for (const k of d.view(r.credentials)) {
        const state =
          k.revoked_at !== undefined
            ? `revoked ${time(k.revoked_at)}`
            : k.expires_at !== undefined
              ? `expires ${time(k.expires_at)}`
              : 'live';
        d.print(
          `${k.id}  ${k.role.padEnd(8)} ${(k.client_id ?? k.name ?? '-').padEnd(20)} ${state}  created ${time(k.created_at)}\n`,
        );
      }
      if (r.credentials.length === 0) d.print('no keys\n');
    });

  program
    .command('audit')
    .description('who created, cancelled, answered, enrolled or revoked what, and when (newest first)')
    .option('--limit <n>', 'at most n entries (default 50)', positive)
    .option('--actor <id>', 'only this credential id (or token / open)')
    .option('--action <action>', 'only this action (task.create, task.cancel, client.revoke …)')
    .action(async (o: { limit?: number; actor?: string; action?: string }) => {
      const limit = o.limit ?? 50;
      let entries: HttpAuditEntry[];
      const db = d.dbPath();
      if (db !== undefined) {
        const store = openSqliteStore({ path: db, readonly: true });
        try {
          entries = (
            await store.security.listAudit({
              limit,
              ...(o.actor !== undefined ? { actor: o.actor } : {}),
              ...(o.action !== undefined ? { action: o.action } : {}),
            })
          ).map((e) => ({ ...e }));
        } finally {
          await store.close();
        }
      } else {
        const q = new URLSearchParams({ limit: String(limit) });
        if (o.actor !== undefined) q.set('actor', o.actor);
        if (o.action !== undefined) q.set('action', o.action);
        entries = (await client('audit').call(audit, 'GET', `/api/audit?${q.toString()}`)).entries;
      }
      if (d.json()) return d.printJson({ entries });
      for (const e of d.view(entries)) {
        d.print(
          `${time(e.at)}  ${e.action.padEnd(14)} ${(e.target ?? '-').padEnd(38)} ${e.outcome.padEnd(7)} by ${e.actor} (${e.role}, ${e.source})\n`,
        );
      }
      if (entries.length === 0) d.print('no audit entries\n');
    });
}
