import { TaskListQuerySchema } from '@ccagent/protocol';
import { describe, expect, it } from 'vitest';
import { HttpError, parseQuery, requestUrl } from './http-kit.js';

function refusal(f: () => unknown): { status: number; code: string; path?: string | undefined } | undefined {
  try {
    f();
    return undefined;
  } catch (err) {
    if (!(err instanceof HttpError)) throw err;
    return { status: err.status, code: err.code, path: err.path };
  }
}

describe('parseQuery', () => {
  it('refuses a parameter given twice, however its name is encoded, naming it (guards against one reader taking the first value and another the last)', () => {
    for (const q of ['client=a&client=b', 'client=a&%63lient=b', 'client=a&client=', 'limit=5&limit=5']) {
      const name = q.split('=')[0] === 'limit' ? 'limit' : 'client';
      expect(
        refusal(() => parseQuery(TaskListQuerySchema, new URLSearchParams(q))),
        q,
      ).toEqual({
        status: 400,
        code: 'invalid_query',
        path: `$.${name}`,
      });
    }
    expect(refusal(() => parseQuery(TaskListQuerySchema, new URLSearchParams('a b=1&a%20b=2')))?.path).toBe(
      '$["a b"]',
    );
  });

  it('parses each parameter once into the schema’s types, and refuses a name the schema does not declare, __proto__ included', () => {
    expect(
      parseQuery(TaskListQuerySchema, new URLSearchParams('client=pc-1&limit=5&status=queued,running')),
    ).toEqual({
      client: 'pc-1',
      limit: 5,
      offset: 0,
      order: 'newest',
      status: ['queued', 'running'],
    });
    for (const q of ['Client=pc-1', '__proto__=x', 'constructor=x'])
      expect(refusal(() => parseQuery(TaskListQuerySchema, new URLSearchParams(q)))?.code, q).toBe(
        'invalid_query',
      );
  });
});

describe('requestUrl', () => {
  it('reads an origin-form target as a path even when it starts with // (guards against a 500 or a host taken from the path)', () => {
    expect(requestUrl('//').pathname).toBe('//');
    expect(requestUrl('//evil.example/api/tasks?client=a').pathname).toBe('//evil.example/api/tasks');
    expect(requestUrl('//evil.example/api/tasks').host).toBe('localhost');
    expect(requestUrl('/api/tasks?client=a&client=b').searchParams.getAll('client')).toEqual(['a', 'b']);
    expect(requestUrl('http://other.example/api/tasks?x=1').pathname).toBe('/api/tasks');
    expect(refusal(() => requestUrl('*'))).toMatchObject({ status: 400, code: 'invalid_path' });
  });
});
