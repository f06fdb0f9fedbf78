#!/usr/bin/env node
// `ccagent-mc-conformance`: plays the backend side of the mod protocol against any mod (a Fabric/Forge mod, the
// bridge bot) and reports which messages and behaviours are right. Exit status 0 when every check passes.
import { parseArgs } from 'node:util';
import { runConformance } from './conformance/conformance.js';

const USAGE = `usage: ccagent-mc-conformance [--port 9876] [--host 127.0.0.1] [--action-timeout-ms 60000]
                              [--connect-timeout-ms 120000] [--skip-reconnect] [--seed] [--json]

Listens where your mod connects (stop the orchestrator first, or point the mod at --port), then checks: register,
state_update, each action type answered with its id, a repeated id answered with the earlier outcome, stop, an error
frame not breaking the mod, valid frames only, and a reconnect after about 5 s with the same instanceId.
--seed: a mod written from the seed's protocol page alone; the repeated-id and error-frame checks (what ccagent
adds) are reported but do not decide the exit status.`;

async function main(): Promise<void> {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        port: { type: 'string' },
        host: { type: 'string' },
        'action-timeout-ms': { type: 'string' },
        'connect-timeout-ms': { type: 'string' },
        'skip-reconnect': { type: 'boolean' },
        seed: { type: 'boolean' },
        json: { type: 'boolean' },
        help: { type: 'boolean' },
      },
    }));
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n${USAGE}\n`);
    process.exit(2);
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  const num = (name: string, v: string | undefined): number | undefined => {
    if (v === undefined) return undefined;
    if (!/^\d+$/.test(v)) {
      process.stderr.write(`--${name}: expected a whole number, got "${v}"\n`);
      process.exit(2);
    }
    return Number(v);
  };
  const port = num('port', values.port);
  const actionTimeoutMs = num('action-timeout-ms', values['action-timeout-ms']);
  const connectTimeoutMs = num('connect-timeout-ms', values['connect-timeout-ms']);
  try {
    const report = await runConformance({
      ...(port !== undefined ? { port } : {}),
      ...(values.host !== undefined ? { host: values.host } : {}),
      ...(actionTimeoutMs !== undefined ? { actionTimeoutMs } : {}),
      ...(connectTimeoutMs !== undefined ? { connectTimeoutMs } : {}),
      ...(values['skip-reconnect'] ? { skipReconnect: true } : {}),
      ...(values.seed ? { profile: 'seed' as const } : {}),
      onProgress: (line) => {
        if (!values.json) process.stdout.write(`${line}\n`);
      },
    });
    if (values.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    else {
      const failed = report.checks.filter((c) => !c.ok).length;
      process.stdout.write(`${report.checks.length - failed} passed, ${failed} failed\n`);
    }
    process.exit(report.passed ? 0 : 1);
  } catch (e) {
    process.stderr.write(`ccagent-mc-conformance: ${(e as Error).message}\n`);
    process.exit(1);
  }
}

void main();
