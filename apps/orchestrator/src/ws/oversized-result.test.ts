import { describe, expect, it } from 'vitest';
import { ChunkHeads, HEAD_CHARS, topLevelIds } from './oversized-result.js';

describe('topLevelIds', () => {
  it('reads type, call_id and task_id at the top level in any key order, from text cut anywhere', () => {
    const js = '{"type":"command_result","task_id":"t-1","call_id":"c-1","ok":true,"result":"xxxx';
    expect(topLevelIds(js)).toEqual({ type: 'command_result', task_id: 't-1', call_id: 'c-1' });
    // Lua's encoder sorts keys: the task id comes after the result, beyond the cut.
    const lua = '{"call_id":"c-2","ok":true,"result":{"content":"aaaa';
    expect(topLevelIds(lua)).toEqual({ call_id: 'c-2' });
    expect(topLevelIds(' \n{ "call_id" : "c-3" , "x": 1}')).toEqual({ call_id: 'c-3' });
  });

  it('skips the same names nested in a result, escaped strings and values that are no strings (guards: failing another call named inside the output)', () => {
    const nested =
      '{"ok":true,"result":{"call_id":"c-inner","task_id":"t-inner","list":[{"call_id":"c-deep"}]},"call_id":"c-outer"}';
    expect(topLevelIds(nested)).toEqual({ call_id: 'c-outer' });
    expect(topLevelIds('{"call_id":"a\\"b","task_id":7,"type":null}')).toEqual({});
    expect(topLevelIds('{"result":"\\"call_id\\":\\"c-fake\\"","call_id":"c-real"}')).toEqual({
      call_id: 'c-real',
    });
    expect(topLevelIds('["call_id","c-1"]')).toEqual({});
    expect(topLevelIds('not json "call_id":"c-1"')).toEqual({});
    expect(topLevelIds(`{"call_id":"${'x'.repeat(300)}"}`)).toEqual({});
  });

  it('reads only the first HEAD_CHARS characters', () => {
    const late = `{"pad":"${'p'.repeat(HEAD_CHARS)}","call_id":"c-late"}`;
    expect(topLevelIds(late)).toEqual({});
  });
});

describe('ChunkHeads', () => {
  it('gives a transfer’s start once and keeps a bounded number of them', () => {
    const heads = new ChunkHeads();
    heads.first('a', 'x'.repeat(HEAD_CHARS + 10));
    expect(heads.take('a')).toHaveLength(HEAD_CHARS);
    expect(heads.take('a')).toBeUndefined();
    for (let i = 0; i < 20; i++) heads.first(`t${i}`, `{"call_id":"c-${i}"`);
    expect(heads.take('t0')).toBeUndefined();
    expect(heads.take('t19')).toBe('{"call_id":"c-19"');
  });
});
