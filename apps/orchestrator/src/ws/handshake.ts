/**
 * The handshake: a new connection must send a valid `hello` within `helloTimeoutMs` (protocol version, token, not a
 * client cut off for flooding, usable argument schemas, no tool listed twice). The client's facts are on disk before
 * the `welcome`; then its connection joins the registry (replacing an older one for the same client id, which is told
 * why and closed) and its frames count against the client's rate limit. A repeated `hello` on the same socket
 * re-registers the commands.
 */
import type { Clock, Logger, TimerHandle } from '@ccagent/engine';
import { PROTOCOL_VERSION, type HelloMessage, type ProtocolErrorCode } from '@ccagent/protocol';
import type { ClientRegistry } from '../clients/client-registry.js';
import type { ClientPersistence, ToolInfo } from '../client-persistence.js';
import type { OrchestratorConfig } from '../config.js';
import { type AuthResult, type Principal, secretMatches } from '@ccagent/security';
import { ORCHESTRATOR_VERSION } from '../version.js';
import { commandSpecToDescriptor } from '../wire.js';
import type { ArgsValidator } from './args-validator.js';
import type { ClientRateLimits } from './client-rate-limits.js';
import { CLOSE_CODES } from './close-codes.js';
import type { Connection } from './connection.js';
import type { WsReplies } from './ws-replies.js';

/** Dependencies of {@link Handshake}. */
export interface HandshakeOptions {
  config: OrchestratorConfig;
  /** Shared secret a `hello` must carry, if any. */
  token: string | undefined;
  validator: ArgsValidator;
  clients: ClientPersistence;
  registry: ClientRegistry;
  rateLimits: ClientRateLimits;
  /** Refusals in a row after which a client counts as a flooder (also for its next `hello`). */
  maxRejected: number;
  replies: WsReplies;
  clock: Clock;
  logger: Logger;
  /**
   * Who a `hello` is (the per-computer key, the shared token, or an open server). Without it, only the shared token
   * is checked (embedding and tests).
   */
  authenticate?: (clientId: string, token: string | undefined, source: string) => AuthResult;
  /** What the `welcome` offers the computer's menus: the kinds it may create and the server's model names. */
  offer?: () => { taskKinds: string[]; models: string[]; modelRoles: Record<string, string[]> };
  /**
   * The orchestrator's server-side tools: a command a computer registers under one of their names is refused (not
   * registered; the client is told why), the rest of its commands are registered.
   */
  serverTools?: { has(name: string): boolean; names(): string[] };
  /** The server's word on a computer's screen mirror, sent in its `welcome` (undefined: no opinion, not sent). */
  screen?: (clientId: string) => boolean | undefined;
}

/** See the module comment. */
export class Handshake {
  private readonly helloTimers = new WeakMap<Connection, TimerHandle>();

  constructor(private readonly o: HandshakeOptions) {}

  /** The kinds `principal` may create (its key's grants narrow them) and the model names, when offered. */
  private offerFor(principal: Principal): {
    task_kinds?: string[];
    models?: string[];
    model_roles?: Record<string, string[]>;
  } {
    const offer = this.o.offer?.();
    if (!offer) return {};
    const granted = principal.grants.kinds;
    const kinds =
      granted === undefined ? offer.taskKinds : offer.taskKinds.filter((k) => granted.includes(k));
    const roles: Record<string, string[]> = {};
    for (const k of kinds) {
      const r = offer.modelRoles[k];
      if (r !== undefined) roles[k] = r;
    }
    return { task_kinds: kinds, models: offer.models, model_roles: roles };
  }

  /** A connection opened: it is closed unless a `hello` arrives within `helloTimeoutMs`. */
  arm(conn: Connection): void {
    const ms = this.o.config.server.helloTimeoutMs;
    this.helloTimers.set(
      conn,
      this.o.clock.setTimeout(() => {
        if (conn.state === 'awaiting_hello') {
          this.o.replies.error(conn, 'unauthorized', `no hello within ${ms} ms`);
          conn.close(CLOSE_CODES.helloTimeout, 'no hello received in time');
        }
      }, ms),
    );
  }

  /** The hello timer of `conn` is no longer needed (it said hello, or closed). */
  disarm(conn: Connection): void {
    const t = this.helloTimers.get(conn);
    if (t !== undefined) this.o.clock.clearTimeout(t);
  }

  async hello(conn: Connection, msg: HelloMessage): Promise<void> {
    const first = conn.state === 'awaiting_hello';
    const refuse = (code: ProtocolErrorCode, message: string, close: number, path?: string): void => {
      this.o.replies.send(conn, { type: 'error', code, message, ...(path !== undefined ? { path } : {}) });
      if (first) conn.close(close, message);
    };
    if (msg.protocol_version !== PROTOCOL_VERSION) {
      refuse(
        'protocol_version',
        `protocol version ${msg.protocol_version} is not supported; this server speaks ${PROTOCOL_VERSION}`,
        CLOSE_CODES.protocolVersion,
        '$.protocol_version',
      );
      return;
    }
    const source = `ws ${conn.remoteAddress}`;
    let principal: Principal;
    if (this.o.authenticate) {
      // Before anything is recorded about the client: a refused hello writes nothing and replaces no one.
      const auth = this.o.authenticate(msg.client_id, msg.token, source);
      if (!auth.ok) {
        refuse(
          auth.code,
          auth.message,
          auth.code === 'rate_limited' ? CLOSE_CODES.rateLimited : CLOSE_CODES.unauthorized,
          '$.token',
        );
        return;
      }
      principal = auth.principal;
    } else {
      if (this.o.token !== undefined && !secretMatches(msg.token, this.o.token)) {
        refuse(
          'unauthorized',
          msg.token === undefined ? 'this server requires a token' : 'wrong token',
          CLOSE_CODES.unauthorized,
          '$.token',
        );
        return;
      }
      const actor = this.o.token === undefined ? 'open' : 'token';
      principal = { role: 'computer', actor, clientId: msg.client_id, grants: {}, source };
    }
    if (first) {
      const wait = this.o.rateLimits.cutOffFor(msg.client_id, this.o.maxRejected, this.o.clock.now());
      if (wait > 0) {
        // Closed for flooding and back before its bucket refilled: a new connection must not buy a fresh limit.
        refuse(
          'rate_limited',
          `client "${msg.client_id}" was cut off for flooding; reconnect in ${Math.ceil(wait / 1000)} s`,
          CLOSE_CODES.rateLimited,
        );
        return;
      }
    }
    if (!first && msg.client_id !== conn.clientId) {
      refuse(
        'forbidden',
        `this connection is client "${conn.clientId}"; reconnect to change it`,
        0,
        '$.client_id',
      );
      return;
    }
    const dupTool = duplicateName(msg.tools ?? []);
    if (dupTool !== undefined) {
      refuse(
        'invalid_field',
        `tool "${dupTool.name}" is listed twice`,
        CLOSE_CODES.invalidHello,
        `$.tools[${dupTool.index}].name`,
      );
      return;
    }
    for (const [i, c] of msg.commands.entries()) {
      if (c.args_schema === undefined) continue;
      const check = this.o.validator.checkSchema(c.args_schema);
      if (!check.ok) {
        refuse(
          'invalid_field',
          `args_schema of command "${c.name}" is not a usable JSON Schema: ${check.message}`,
          CLOSE_CODES.invalidHello,
          `$.commands[${i}].args_schema`,
        );
        return;
      }
    }
    this.disarm(conn);
    const clientId = msg.client_id;
    const clashes = serverToolClashes(msg.commands, this.o.serverTools);
    const commands = msg.commands
      .filter((c) => !this.o.serverTools?.has(c.name))
      .map(commandSpecToDescriptor);
    const now = this.o.clock.now();
    // Durable before the welcome acknowledges it.
    await this.o.clients.clientSeen({
      clientId,
      commands,
      at: now,
      ...(msg.client_version !== undefined ? { clientVersion: msg.client_version } : {}),
      // Its key group while it is offline (server.groups.byOperatorKey), durable like the rest of the hello.
      connectedWith: principal.actor,
    });
    if (msg.tools !== undefined) await this.o.clients.replaceTools(clientId, msg.tools.map(toToolInfo), now);
    if (conn.state === 'closing') return;
    conn.clientId = clientId;
    conn.state = 'ready';
    conn.principal = principal;
    // From here on its frames count against the client's limit, which a reconnect does not reset.
    const at = this.o.clock.now();
    conn.useClientLimit(this.o.rateLimits.acquire(clientId, at), at);
    const s = this.o.config.server;
    conn.send({
      type: 'welcome',
      client_id: clientId,
      server_version: ORCHESTRATOR_VERSION,
      protocol_version: PROTOCOL_VERSION,
      heartbeat_ms: s.heartbeatMs,
      max_message_bytes: this.o.config.server.maxMessageBytes,
      max_tool_output_bytes: s.inputLimits.maxToolOutputBytes,
      ...this.offerFor(principal),
      ...(this.o.serverTools && this.o.serverTools.names().length > 0
        ? { server_tools: this.o.serverTools.names() }
        : {}),
      ...screenWord(this.o.screen?.(clientId)),
    });
    if (clashes) {
      this.o.logger.warn(
        { client_id: clientId, commands: clashes.names },
        'commands named like server-side tools not registered',
      );
      this.o.replies.send(conn, { type: 'error', code: 'invalid_field', ...clashes.error });
    }
    const replaced = this.o.registry.attach(conn, commands, msg.client_version);
    if (replaced) {
      this.o.logger.info(
        { client_id: clientId, conn: replaced.serial, by: conn.serial },
        'connection replaced',
      );
      this.o.replies.send(replaced, {
        type: 'error',
        code: 'duplicate',
        message: `replaced by a newer connection identifying as client "${clientId}"`,
      });
      // Detach happens on close; the registry already points at the new connection.
      replaced.close(CLOSE_CODES.replaced, `replaced by a newer connection for client ${clientId}`);
    }
    this.o.logger.info(
      { client_id: clientId, conn: conn.serial, commands: commands.length, first },
      first ? 'client connected' : 'client re-registered',
    );
  }
}

/**
 * Commands of a `hello` named like one of the orchestrator's server-side tools: their names and the error the client
 * is sent (the path of the first), or undefined when there is none.
 */
export function serverToolClashes(
  commands: ReadonlyArray<{ name: string }>,
  serverTools: { has(name: string): boolean } | undefined,
): { names: string[]; error: { message: string; path: string } } | undefined {
  if (!serverTools) return undefined;
  const at = commands.flatMap((c, i) => (serverTools.has(c.name) ? [i] : []));
  if (at.length === 0) return undefined;
  const names = at.map((i) => (commands[i] as { name: string }).name);
  const list = names.map((n) => `"${n}"`).join(', ');
  const many = names.length > 1;
  return {
    names,
    error: {
      message:
        `command${many ? 's' : ''} ${list} not registered: the orchestrator has ${many ? 'server-side tools' : 'a server-side tool'} ` +
        `of the same name, which tasks call instead; rename ${many ? 'them' : 'it'} on this computer to offer ${many ? 'them' : 'it'}`,
      path: `$.commands[${at[0] as number}].name`,
    },
  };
}

/** The first name that repeats in a tool list (the registry is keyed by name). */
export function duplicateName(
  tools: ReadonlyArray<{ name: string }>,
): { name: string; index: number } | undefined {
  const seen = new Set<string>();
  for (const [index, t] of tools.entries()) {
    if (seen.has(t.name)) return { name: t.name, index };
    seen.add(t.name);
  }
  return undefined;
}

/** A tool of `hello` / `tools_update` → what the client store keeps. */
export function toToolInfo(t: {
  name: string;
  status: ToolInfo['status'];
  version: number;
  description?: string | undefined;
  file?: string | undefined;
  updated_at?: number | undefined;
}): ToolInfo {
  const out: ToolInfo = { name: t.name, status: t.status, version: t.version };
  if (t.description !== undefined) out.description = t.description;
  if (t.file !== undefined) out.file = t.file;
  if (t.updated_at !== undefined) out.updatedAt = t.updated_at;
  return out;
}

/** The welcome's `screen` field: only when the server has a word. */
function screenWord(screen: boolean | undefined): { screen?: boolean } {
  return screen === undefined ? {} : { screen };
}
