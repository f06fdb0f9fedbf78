/** Enrollment for the security tests: the operator issues a code over HTTP, the computer trades it for its key. */
import { expect } from 'vitest';
import type { Harness } from './harness.js';

/** Operator: issue an enrollment code for `clientId` (with `extra` fields); computer: trade it for its key. */
export async function enroll(
  h: Harness,
  clientId: string,
  extra: Record<string, unknown> = {},
): Promise<string> {
  const issued = await h.http('/api/credentials/enroll', {
    method: 'POST',
    json: { client_id: clientId, ...extra },
  });
  expect(issued.status).toBe(201);
  const { code } = (await issued.json()) as { code: string };
  const paired = await h.http('/api/pair', {
    method: 'POST',
    auth: false,
    json: { code, client_id: clientId },
  });
  expect(paired.status).toBe(200);
  return ((await paired.json()) as { key: string }).key;
}
