/** Client routes: the known clients (live state from the registry, facts from the store) and their tools. */
import type { ClientsResponse, HttpClient, ToolsQuerySchema, ToolsResponse } from '@ccagent/protocol';
import { descriptorToWire } from '../../wire.js';
import { sendJson } from '../http-kit.js';
import type { HttpApiOptions, QueryOf, RouteRequest } from '../route.js';

/** `GET /api/clients`. */
export async function listClients(d: HttpApiOptions, { res }: RouteRequest): Promise<void> {
  const known = await d.clients.listClients();
  const out: HttpClient[] = known.map((c) => {
    const live = d.registry.get(c.clientId);
    const commands = live && live.commands.size > 0 ? [...live.commands.values()] : c.commands;
    return {
      client_id: c.clientId,
      connected: live?.connection !== undefined,
      in_grace: live ? live.connection === undefined && live.inGrace : false,
      ...(c.clientVersion !== undefined ? { client_version: c.clientVersion } : {}),
      ...(c.firstSeenAt !== undefined ? { first_seen_at: c.firstSeenAt } : {}),
      last_seen_at: live?.connection ? d.now() : c.lastSeenAt,
      commands: commands.map(descriptorToWire),
    };
  });
  const body: ClientsResponse = { clients: out };
  sendJson(res, 200, body);
}

/** `GET /api/tools`: model-written tools, by client and status, and the server-side tools. */
export async function listTools(
  d: HttpApiOptions,
  { res, query: q }: RouteRequest<QueryOf<typeof ToolsQuerySchema>>,
): Promise<void> {
  const tools = await d.clients.listTools({
    ...(q.client ? { clientId: q.client } : {}),
    ...(q.status ? { status: q.status } : {}),
  });
  const body: ToolsResponse = {
    tools: tools.map((t) => ({
      client_id: t.clientId,
      name: t.name,
      status: t.status,
      version: t.version,
      ...(t.description !== undefined ? { description: t.description } : {}),
      ...(t.file !== undefined ? { file: t.file } : {}),
      ...(t.updatedAt !== undefined ? { updated_at: t.updatedAt } : {}),
      ...(t.recordedAt !== undefined ? { recorded_at: t.recordedAt } : {}),
    })),
    // The orchestrator's own tools, which every task is offered beside its computer's commands.
    server_tools: (d.serverTools?.descriptors() ?? []).map((t) => ({
      name: t.name,
      ...(t.description !== undefined ? { description: t.description } : {}),
      ...(t.argsSchema !== undefined ? { parameters: t.argsSchema } : {}),
      ...(t.timeoutMs !== undefined ? { timeout_ms: t.timeoutMs } : {}),
    })),
  };
  sendJson(res, 200, body);
}
