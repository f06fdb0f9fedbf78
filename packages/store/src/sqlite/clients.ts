/**
 * Clients and their tools: each client seen (its commands, version, connection state, first and last sighting) and
 * the registry of model-written tools each reported. Written outside the engine's commits, with `StoreError`s.
 */
import { asc, and, eq, type SQL } from 'drizzle-orm';
import * as schema from '../schema.js';
import {
  clientNotFound,
  requireId,
  requireTime,
  rowToClient,
  rowToTool,
  validateClientUpsert,
  validateTools,
  type ClientRecord,
  type ClientUpsert,
  type ModelToolInfo,
  type ModelToolRecord,
  type ToolFilter,
} from '@ccagent/store-core';
import type { SqliteConnection } from './connection.js';

/** See the module comment. */
export class SqliteClients {
  constructor(private readonly c: SqliteConnection) {}

  /** Record a client's hello (or any sighting): commands, connection state, version. Creates it if new. */
  upsertClient(c: ClientUpsert): Promise<void> {
    return this.c.writeStore(() => {
      validateClientUpsert(c);
      const commands = JSON.stringify(c.commands);
      const set: Partial<typeof schema.clients.$inferInsert> = {
        commands,
        connected: c.connected,
        lastSeenAt: c.seenAt,
      };
      if (c.clientVersion !== undefined) set.clientVersion = c.clientVersion;
      if (c.connectedWith !== undefined) set.connectedWith = c.connectedWith;
      this.c.orm
        .insert(schema.clients)
        .values({
          clientId: c.clientId,
          commands,
          connected: c.connected,
          clientVersion: c.clientVersion ?? null,
          connectedWith: c.connectedWith ?? null,
          firstSeenAt: c.seenAt,
          lastSeenAt: c.seenAt,
        })
        .onConflictDoUpdate({ target: schema.clients.clientId, set })
        .run();
    });
  }

  /** Mark a known client connected or disconnected at `at`. `StoreError('client_not_found')` for an unknown id. */
  setClientConnected(clientId: string, connected: boolean, at: number): Promise<void> {
    return this.c.writeStore(() => {
      requireId(clientId, 'clientId');
      requireTime(at, 'at');
      const r = this.c.orm
        .update(schema.clients)
        .set({ connected, lastSeenAt: at })
        .where(eq(schema.clients.clientId, clientId))
        .run();
      if (r.changes === 0) throw clientNotFound(clientId);
    });
  }

  /** Every client seen, by id. */
  listClients(): Promise<ClientRecord[]> {
    return this.c.read(() =>
      this.c.orm.select().from(schema.clients).orderBy(asc(schema.clients.clientId)).all().map(rowToClient),
    );
  }

  /**
   * Replace a client's model-written tools with what it just reported (`tools_update`), atomically. The client must
   * have been upserted first (`client_not_found`); names must be unique and statuses valid (`invalid_input`).
   */
  replaceClientTools(clientId: string, tools: ModelToolInfo[], at: number): Promise<void> {
    return this.c.writeStore(() => {
      validateTools(clientId, tools, at);
      const known = this.c.orm
        .select({ id: schema.clients.clientId })
        .from(schema.clients)
        .where(eq(schema.clients.clientId, clientId))
        .get();
      if (!known) throw clientNotFound(clientId);
      this.c.orm.delete(schema.modelTools).where(eq(schema.modelTools.clientId, clientId)).run();
      if (tools.length > 0) {
        this.c.orm
          .insert(schema.modelTools)
          .values(
            tools.map((t) => ({
              clientId,
              name: t.name,
              status: t.status,
              version: t.version,
              description: t.description ?? null,
              file: t.file ?? null,
              updatedAt: t.updatedAt ?? null,
              recordedAt: at,
            })),
          )
          .run();
      }
    });
  }

  /** Model-written tools, by client then name. */
  listTools(filter: ToolFilter = {}): Promise<ModelToolRecord[]> {
    return this.c.read(() => {
      const conds: SQL[] = [];
      if (filter.clientId !== undefined) conds.push(eq(schema.modelTools.clientId, filter.clientId));
      if (filter.status !== undefined) conds.push(eq(schema.modelTools.status, filter.status));
      return this.c.orm
        .select()
        .from(schema.modelTools)
        .where(and(...conds))
        .orderBy(asc(schema.modelTools.clientId), asc(schema.modelTools.name))
        .all()
        .map(rowToTool);
    });
  }
}
