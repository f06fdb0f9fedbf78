import { afterEach, describe, expect, it } from 'vitest';
import { scriptByMarker, startFakeOllama, type FakeOllama } from './index.js';

let fake: FakeOllama | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function ask(url: string, content: string, earlier: string[] = []): Promise<string> {
  const res = await fetch(`${url}/api/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'm:1',
      stream: false,
      messages: [...earlier.map((c) => ({ role: 'user', content: c })), { role: 'user', content }],
    }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { message: { content: string } }).message.content;
}

describe('scriptByMarker', () => {
  it('answers each marked conversation from its own script, made on its first request, and the rest with the fallback', async () => {
    const { scripts, script } = scriptByMarker('t.x', 'FALLBACK');
    let made = 0;
    const counter = (label: string) => () => {
      made += 1;
      let i = 0;
      return () => `${label} ${++i}`;
    };
    scripts.set('a', counter('a'));
    scripts.set('b-2', counter('b'));
    fake = await startFakeOllama();
    fake.script('m:1', script);
    expect(made).toBe(0);
    // Interleaved: each follows its own count; the marker may stand in an earlier message.
    expect(await ask(fake.url, '#t.x:a# go')).toBe('a 1');
    expect(await ask(fake.url, '#t.x:b-2# go')).toBe('b 1');
    expect(await ask(fake.url, 'next', ['#t.x:a# go'])).toBe('a 2');
    expect(await ask(fake.url, 'next', ['#t.x:b-2# go'])).toBe('b 2');
    expect(made).toBe(2);
    // No marker, another prefix (the dot is literal), or a name with no script: the fallback, and nothing is made.
    expect(await ask(fake.url, 'no marker here')).toBe('FALLBACK');
    expect(await ask(fake.url, '#tzx:a# go')).toBe('FALLBACK');
    expect(await ask(fake.url, '#t.x:c# go')).toBe('FALLBACK');
    expect(made).toBe(2);
    // A script registered after its name was first seen unscripted is made on the next request.
    scripts.set('c', counter('c'));
    expect(await ask(fake.url, '#t.x:c# again')).toBe('c 1');
  });
});
