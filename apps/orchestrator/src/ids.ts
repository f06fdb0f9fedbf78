import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * A UUID-formatted id derived from a key (SHA-256, version nibble 8 per RFC 9562's custom UUID), so a repeated
 * `create_task` with the same `request_id` maps to the same task id and the store's uniqueness makes it idempotent.
 */
export function idFromKey(key: string): string {
  const h = createHash('sha256').update(key).digest('hex').slice(0, 32).split('');
  h[12] = '8';
  h[16] = ((parseInt(h[16] ?? '0', 16) & 0x3) | 0x8).toString(16);
  const s = h.join('');
  return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20, 32)}`;
}

/** Constant-time comparison of a presented secret with the expected one (lengths hidden by hashing). */
export function secretMatches(presented: string | undefined, expected: string): boolean {
  if (presented === undefined) return false;
  const a = createHash('sha256').update(presented).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}
