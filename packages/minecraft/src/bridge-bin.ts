#!/usr/bin/env node
// `ccagent-mc-bridge`: a mineflayer bot that joins a Minecraft Java server as a player and speaks the mod protocol
// to the orchestrator, so a minecraft_agent task can play on any server without a client mod.
import { parseArgs } from 'node:util';
import type { Logger } from '@ccagent/engine';
import { startBridge } from './bridge/bridge.js';

const USAGE = `usage: ccagent-mc-bridge --server HOST[:PORT] --username NAME [--orchestrator ws://HOST:9876]
                         [--instance-id ID] [--mc-version 1.18.2] [--auth offline|microsoft] [--token TOKEN]

Joins the Minecraft server as player NAME (offline mode unless --auth microsoft) and connects to the orchestrator's
mod endpoint (default ws://localhost:9876) as instance ID (default NAME), reconnecting every 5 s when it is lost.
When the orchestrator has a token, pass it (or an operator key, or a key enrolled for instance ID) with --token or
the environment variable CCAGENT_TOKEN.`;

function line(level: string, obj: unknown, msg?: string): void {
  process.stderr.write(JSON.stringify({ level, time: Date.now(), msg, ...(obj as object) }) + '\n');
}
const logger: Logger = {
  debug: () => undefined,
  info: (o, m) => line('info', o, m),
  warn: (o, m) => line('warn', o, m),
  error: (o, m) => line('error', o, m),
};

async function main(): Promise<void> {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        server: { type: 'string' },
        username: { type: 'string' },
        orchestrator: { type: 'string' },
        'instance-id': { type: 'string' },
        'mc-version': { type: 'string' },
        auth: { type: 'string' },
        token: { type: 'string' },
        help: { type: 'boolean' },
      },
    }));
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n${USAGE}\n`);
    process.exit(2);
  }
  if (values.help) {
    process.stdout.write(USAGE + '\n');
    process.exit(0);
  }
  if (values.server === undefined || values.username === undefined) {
    process.stderr.write(`--server and --username are required\n${USAGE}\n`);
    process.exit(2);
  }
  if (values.auth !== undefined && values.auth !== 'offline' && values.auth !== 'microsoft') {
    process.stderr.write(`--auth must be offline or microsoft\n`);
    process.exit(2);
  }
  const token = values.token ?? process.env['CCAGENT_TOKEN'];
  try {
    const bridge = await startBridge({
      server: values.server,
      username: values.username,
      ...(values.orchestrator !== undefined ? { orchestrator: values.orchestrator } : {}),
      ...(values['instance-id'] !== undefined ? { instanceId: values['instance-id'] } : {}),
      ...(values['mc-version'] !== undefined ? { version: values['mc-version'] } : {}),
      ...(values.auth !== undefined ? { auth: values.auth } : {}),
      ...(token !== undefined && token !== '' ? { token } : {}),
      logger,
    });
    logger.info({ server: values.server, username: values.username }, 'bridge joined and registered');
    const stop = (): void => {
      bridge.close();
      process.exit(0);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    const reason = await bridge.ended;
    logger.warn({ reason }, 'the bot left the server');
    process.exit(1);
  } catch (e) {
    logger.error({ err: (e as Error).message }, 'bridge failed');
    process.exit(1);
  }
}

void main();
