import { HTTP_ROUTES } from '@ccagent/protocol';
import { describe, expect, it } from 'vitest';
import { needsCredential } from '../../security/route-access.js';
import { ROUTES } from './index.js';

/** A concrete path for a documented path pattern. */
const sample = (path: string): string => path.replace(':id', 'task-1').replace('<path>', 'ccagent/json.lua');

describe('the route table', () => {
  it('serves exactly the routes @ccagent/protocol documents, with the same methods and openness (guards against a route the generated reference does not list, or one it lists that is gone)', () => {
    expect(ROUTES).toHaveLength(HTTP_ROUTES.length);
    for (const spec of HTTP_ROUTES) {
      const matches = ROUTES.filter((r) => r.method === spec.method && r.pattern.test(sample(spec.path)));
      expect(
        matches.map((r) => r.name),
        `${spec.method} ${spec.path}`,
      ).toHaveLength(1);
      const open = matches[0] !== undefined && !needsCredential(matches[0].access);
      expect(open, `${spec.method} ${spec.path} open`).toBe(Boolean(spec.open));
    }
  });
});
