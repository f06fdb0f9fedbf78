// The servers the model-server contract runs against: the scripted double (@ccagent/testkit), always, and the real
// Ollama that tools/ollama-test-server.sh builds and starts (CCAGENT_TEST_OLLAMA_URL / _MODEL), in every CI run.
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startFakeOllama, type FakeOllama, type FakeReply } from '@ccagent/testkit';

/** What a check asks the server to answer next. The double is scripted with it; a real model ignores it. */
export interface Arranged {
  /** Plain text the double answers with (a real model writes its own). */
  text?: string;
  /** JSON the double answers with (for `format`); a real model is constrained by the schema instead. */
  json?: unknown;
}

/** One model server under contract. */
export interface ContractTarget {
  /** Shown in test names, e.g. `double` or `real Ollama 0.17.4`. */
  readonly name: string;
  /** Base URL, e.g. `http://127.0.0.1:56434` (the OpenAI-compatible API is under `/v1`). */
  readonly url: string;
  /** An installed chat model. */
  readonly model: string;
  /** True for a real model (whose words the checks cannot choose). */
  readonly real: boolean;
  /** Prepare the answers of the next `count` chat requests of `model` (default 1). */
  arrange(reply: Arranged, count?: number): void;
  close(): Promise<void>;
}

/** The model the double serves under the contract (a real name shape: a tag, so `:latest` plays no part). */
export const DOUBLE_MODEL = 'smollm2-135m-instruct:q4_1';

function scripted(reply: Arranged): FakeReply {
  if (reply.json !== undefined) return { json: reply.json };
  return reply.text ?? 'Hello from the double.';
}

/** The scripted double, with its prompt cache and time model, reporting what Ollama reports. */
export async function doubleTarget(
  name = 'double',
  options: Parameters<typeof startFakeOllama>[0] = {},
): Promise<ContractTarget & { fake: FakeOllama }> {
  const fake = await startFakeOllama({ version: '0.17.4', ...options });
  const queue: FakeReply[] = [];
  // One script for the whole run: each chat request takes the next arranged reply.
  fake.script(DOUBLE_MODEL, () => queue.shift() ?? 'Hello from the double.');
  return {
    name,
    url: fake.url,
    model: DOUBLE_MODEL,
    real: false,
    fake,
    arrange(reply, count = 1) {
      for (let i = 0; i < count; i += 1) queue.push(scripted(reply));
    },
    close: () => fake.close(),
  };
}

/** The real server from the environment, or undefined when the real-model tier is not set up here. */
export function realTarget(): ContractTarget | undefined {
  const url = process.env['CCAGENT_TEST_OLLAMA_URL'];
  const model = process.env['CCAGENT_TEST_OLLAMA_MODEL'];
  if (!url || !model) return undefined;
  return {
    name: `real Ollama ${process.env['CCAGENT_TEST_OLLAMA_VERSION'] ?? ''}`.trim(),
    url,
    model,
    real: true,
    arrange() {},
    close: async () => {},
  };
}

/**
 * A deliberately broken double: the real double behind a proxy that reports `prompt_eval_count` the other way
 * (only the tokens evaluated, cached ones left out), as a fake written from a wrong reading of Ollama would. The
 * contract must fail against it; this is how the suite shows that it can.
 */
export async function brokenCountsTarget(): Promise<ContractTarget> {
  const inner = await doubleTarget('broken double', { server: { reportCachedTokens: true } });
  return proxied(inner, 'broken double', {
    rewrite: (text) =>
      text
        .split('\n')
        .map((line) => {
          if (!line.includes('"prompt_eval_count"')) return line;
          const o = JSON.parse(line) as Record<string, number>;
          o['prompt_eval_count'] = (o['prompt_eval_count'] ?? 0) - (o['prompt_eval_cached_count'] ?? 0);
          delete o['prompt_eval_cached_count'];
          return JSON.stringify(o);
        })
        .join('\n'),
  });
}

/**
 * The double shared with another client, as the real server in CI may be: before the chat requests `interleave`
 * picks (by their 1-based order), another client's request with a prompt of its own runs on the same model, which
 * takes the double's one cache slot (Ollama's `OLLAMA_NUM_PARALLEL=1`), so that request evaluates its whole prompt.
 */
export async function sharedTarget(interleave: (request: number) => boolean): Promise<ContractTarget> {
  const inner = await doubleTarget('shared double');
  let chats = 0;
  return proxied(inner, 'shared double', {
    async before(path) {
      if (path !== '/api/chat' || !interleave((chats += 1))) return;
      const res = await fetch(`${inner.url}/api/chat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: inner.model,
          messages: [{ role: 'user', content: `Another client asks something else entirely (${chats}).` }],
          stream: false,
        }),
      });
      if (res.status !== 200) throw new Error(`the other client's request failed: ${res.status}`);
      await res.arrayBuffer();
    },
  });
}

/** `inner` behind an HTTP proxy that may act `before` forwarding a request and `rewrite` the reply's body. */
async function proxied(
  inner: ContractTarget,
  name: string,
  hooks: { before?: (path: string) => Promise<void>; rewrite?: (body: string) => string },
): Promise<ContractTarget> {
  const proxy: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (hooks.before?.(req.url ?? '/') ?? Promise.resolve()).then(
        () => {
          const upstream = httpRequest(
            `${inner.url}${req.url ?? '/'}`,
            { method: req.method, headers: req.headers },
            (up: IncomingMessage) => {
              const body: Buffer[] = [];
              up.on('data', (c: Buffer) => body.push(c));
              up.on('end', () => {
                const text = Buffer.concat(body).toString('utf8');
                const headers = { ...up.headers };
                delete headers['content-length'];
                res.writeHead(up.statusCode ?? 500, headers);
                res.end(hooks.rewrite ? hooks.rewrite(text) : text);
              });
            },
          );
          upstream.end(Buffer.concat(chunks));
        },
        (error: unknown) => {
          res.writeHead(502, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: String(error) }));
        },
      );
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const { port } = proxy.address() as AddressInfo;
  return {
    ...inner,
    name,
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
      proxy.closeAllConnections();
      await inner.close();
    },
  };
}
