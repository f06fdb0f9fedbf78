// The real small model of the real-model tier (tools/ollama-test-server.sh: Ollama built from source, SmolLM2-135M
// from PyPI), for the tools that run on it: the demo's --real mode and the model-cost bench's real.mjs.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const tools = path.dirname(fileURLToPath(import.meta.url));

/**
 * The server's URL, model, version and weights: from CCAGENT_TEST_OLLAMA_* when set (CI, or a developer who ran the
 * script), else from `tools/ollama-test-server.sh --export`, which starts it (building it the first time; its
 * progress goes to stderr). Undefined when it cannot be had here.
 * @returns {{ url: string, model: string, version?: string, weights?: string } | undefined}
 */
export function realModelServer() {
  const fromEnv = (k) => process.env[`CCAGENT_TEST_OLLAMA_${k}`];
  if (fromEnv('URL') && fromEnv('MODEL')) {
    return {
      url: fromEnv('URL'),
      model: fromEnv('MODEL'),
      version: fromEnv('VERSION'),
      weights: fromEnv('WEIGHTS'),
    };
  }
  const r = spawnSync('bash', [path.join(tools, 'ollama-test-server.sh'), '--export'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const get = (k) => new RegExp(`CCAGENT_TEST_OLLAMA_${k}='?([^'\\n]*)'?`).exec(r.stdout ?? '')?.[1];
  if (r.status !== 0 || !get('URL') || !get('MODEL')) return undefined;
  return { url: get('URL'), model: get('MODEL'), version: get('VERSION'), weights: get('WEIGHTS') };
}
