import type { Logger } from '@ccagent/engine';
import { MinecraftError } from '../minecraft-error.js';
import { DEFAULT_MC_PORT } from '../protocol/constants.js';
import { startMineflayerBot, type MineflayerBot } from './mineflayer-runner.js';
import { ModClient } from './mod-client.js';

/** Options of {@link startBridge}. */
export interface BridgeOptions {
  /** Minecraft server as `host[:port]` (default port 25565). */
  server: string;
  username: string;
  /** The orchestrator's mod endpoint (default `ws://localhost:9876`). */
  orchestrator?: string;
  /** Sent as `Authorization: Bearer` when the orchestrator has a token (its token, an operator key, or a key for this instance). */
  token?: string;
  /** Instance id sent in `register` (default: the username). */
  instanceId?: string;
  /** Minecraft version; default: asked from the server. */
  version?: string;
  auth?: 'offline' | 'microsoft';
  /** Reconnect delay to the orchestrator, ms (default 5,000, the protocol's). */
  reconnectDelayMs?: number;
  logger?: Logger;
}

/** A running bridge: the bot in the game and its protocol client. */
export interface Bridge {
  bot: MineflayerBot;
  client: ModClient;
  /** Resolves when the bot left the server (kicked, server closed, quit). */
  ended: Promise<string>;
  close(): void;
}

/** Parse `host[:port]`. Throws `MinecraftError('invalid_config')`. */
export function parseServerAddress(server: string): { host: string; port: number } {
  const m = /^([^:\s]+)(?::(\d{1,5}))?$/.exec(server.trim());
  const port = m?.[2] === undefined ? 25565 : Number(m[2]);
  if (m === null || m[1] === undefined || port < 1 || port > 65535) {
    throw new MinecraftError('invalid_config', `--server must be host[:port], got ${JSON.stringify(server)}`);
  }
  return { host: m[1], port };
}

/**
 * Join the Minecraft server as a player and connect to the orchestrator as a mod instance. Resolves once the bot
 * spawned and the backend acknowledged `register` (the client keeps reconnecting every 5 s until then).
 */
export async function startBridge(opts: BridgeOptions): Promise<Bridge> {
  const { host, port } = parseServerAddress(opts.server);
  const bot = await startMineflayerBot({
    host,
    port,
    username: opts.username,
    ...(opts.version !== undefined ? { version: opts.version } : {}),
    ...(opts.auth !== undefined ? { auth: opts.auth } : {}),
  });
  const client = new ModClient({
    url: opts.orchestrator ?? `ws://localhost:${DEFAULT_MC_PORT}`,
    instanceId: opts.instanceId ?? opts.username,
    ...(opts.token !== undefined ? { token: opts.token } : {}),
    runner: bot.runner,
    // The seed's register.version: the game version the bot joined with.
    version: bot.bot.version,
    name: 'ccagent-mc-bridge',
    platform: 'mineflayer',
    ...(opts.reconnectDelayMs !== undefined ? { reconnectDelayMs: opts.reconnectDelayMs } : {}),
    ...(opts.logger !== undefined ? { logger: opts.logger } : {}),
  });
  bot.onStateChange(() => client.sendState());
  // The mod's `log` lines: what the player reads in the game (chat and server messages, not the action bar), so the
  // dashboard shows the game's side of a task beside its actions.
  bot.bot.on('messagestr', (message: string, position: string) => {
    if (position !== 'game_info' && message.trim() !== '') client.log(message);
  });
  const ended = new Promise<string>((resolve) => {
    bot.bot.once('end', (reason) => resolve(String(reason)));
  });
  void ended.then(() => client.close());
  await client.start();
  return {
    bot,
    client,
    ended,
    close: () => {
      client.close();
      bot.quit();
    },
  };
}
