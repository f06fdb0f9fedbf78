/**
 * `fake-ollama --port 11434 --script scenario.json`: runs the scripted fake Ollama server standalone, so the
 * whole stack can run on a laptop without a GPU. It is a test double: it replays scripted replies, it does not
 * run a model.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { startFakeOllama } from './fake-ollama.js';
import { applyScenario, parseScenario } from './scenario.js';

const USAGE = 'usage: fake-ollama [--port 11434] [--host 127.0.0.1] --script scenario.json';

const HELP = `fake-ollama — a SCRIPTED TEST DOUBLE of an Ollama server. It runs no model: it replays the replies a
scenario file scripts, with Ollama's and OpenAI's exact wire formats, so the stack can run without a GPU.

${USAGE}

  -s, --script FILE   scenario JSON (required), e.g.
                      {"models": {"qwen2.5:7b": ["Hello!", {"toolCalls": [{"name": "dig", "arguments": {}}]}]},
                       "repeat": true, "installed": ["llama3.2"]}
  -p, --port N        port to listen on (default 11434; 0 picks a free one)
      --host ADDR     address to bind (default 127.0.0.1)
  -h, --help          this text

Serves /api/chat, /api/tags, /api/version, /api/show, /v1/chat/completions and /v1/models.
Point clients at it with OLLAMA_HOST=127.0.0.1:PORT (or http://127.0.0.1:PORT/v1 for OpenAI-compatible ones).
`;

async function main(): Promise<number> {
  let values: { port?: string; host?: string; script?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      options: {
        port: { type: 'string', short: 'p' },
        host: { type: 'string' },
        script: { type: 'string', short: 's' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (error) {
    process.stderr.write(`fake-ollama: ${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (values.script === undefined) {
    process.stderr.write(`fake-ollama: --script is required\n${USAGE}\n`);
    return 2;
  }
  const port = values.port === undefined ? 11434 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`fake-ollama: --port must be an integer 0-65535, got ${values.port}\n`);
    return 2;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(values.script, 'utf8'));
  } catch (error) {
    process.stderr.write(`fake-ollama: cannot read scenario ${values.script}: ${(error as Error).message}\n`);
    return 2;
  }
  const scenario = parseScenario(parsed);
  if (!scenario.ok) {
    process.stderr.write(`fake-ollama: invalid scenario ${values.script}: ${scenario.error}\n`);
    return 2;
  }
  const fake = await startFakeOllama({
    port,
    host: values.host ?? '127.0.0.1',
    installed: scenario.value.installed,
    // Nobody can read the recorded requests of a standalone server; kept, they would grow with every request.
    recordRequests: false,
    ...(scenario.value.version ? { version: scenario.value.version } : {}),
  });
  applyScenario(fake, scenario.value);
  process.stdout.write(
    `fake-ollama: SCRIPTED TEST DOUBLE (no model runs here) listening on ${fake.url}\n` +
      `fake-ollama: models: ${Object.keys(scenario.value.models).join(', ') || '(none)'}; ` +
      `use OLLAMA_HOST=${fake.url} or ${fake.url}/v1 for OpenAI-compatible clients\n`,
  );
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await fake.close();
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`fake-ollama: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
