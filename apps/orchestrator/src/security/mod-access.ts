/**
 * Who may connect to the Minecraft mod endpoint (`--mc-port`): the same rules as the ComputerCraft WebSocket. A
 * browser page must not open `ws://localhost:9876`, register as a mod and receive its actions, so the upgrade passes
 * the Host allow-list and the Origin check first (the endpoint serves no page, so no origin is its own: only the
 * allow-list admits one); then, on a server with a token, it must carry
 * `Authorization: Bearer <credential>`: the token or an operator key (any instance), or a computer key, which binds
 * the connection to the instance id the key was enrolled for. A viewer key is read-only and connects no mod. A
 * server without a token (loopback only) accepts mods without a credential, as it accepts computers.
 */
import type { IncomingMessage } from 'node:http';
import type { McUpgradeVerdict } from '@ccagent/minecraft';
import { guardPagelessUpgrade, type GuardPolicy } from './request-guard.js';
import type { SecurityService } from '@ccagent/security';

/** The mod endpoint's upgrade check (see the module comment). */
export function authorizeMod(
  req: IncomingMessage,
  policy: GuardPolicy,
  security: SecurityService,
): McUpgradeVerdict {
  const guard = guardPagelessUpgrade(req.headers, policy);
  if (!guard.ok) return guard;
  const header = req.headers.authorization;
  if (header === undefined && security.isOpen) return { ok: true };
  const auth = security.authenticateBearer(header, `mc ${req.socket.remoteAddress ?? 'unknown'}`);
  if (!auth.ok) {
    return {
      ok: false,
      status: auth.code === 'rate_limited' ? 429 : 401,
      code: auth.code,
      message:
        header === undefined
          ? 'this server requires a credential from mods: "Authorization: Bearer <token>" (ccagent-mc-bridge --token)'
          : auth.message,
    };
  }
  const who = auth.principal;
  if (who.role === 'viewer') {
    return { ok: false, status: 403, code: 'forbidden', message: 'a viewer key cannot connect a mod' };
  }
  if (who.role === 'computer') return { ok: true, instanceId: who.clientId as string };
  return { ok: true };
}
