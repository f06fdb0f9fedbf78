/**
 * How the conversation layout writes the game into its messages: terse, and saying each thing once. Every token of
 * a new message is evaluated by the model server, so an action is a few words (`place cobblestone at 19 63 19`, not
 * its JSON), a result says only what the action does not already say (`done`, or the mined count, the position
 * reached), a failure's error appears once, and the state's slow-moving fields (health, hunger, dimension, game
 * mode) are written only when they changed since the message before.
 */
import type { JsonValue } from '@ccagent/engine';
import type { ActionSpec, PlayerState } from '../protocol/messages.js';

/** One action in a few words, as the model would say it. */
export function actionText(a: ActionSpec): string {
  switch (a.type) {
    case 'goto':
      return a.target !== undefined ? `goto the nearest ${a.target}` : `goto ${a.x} ${a.y} ${a.z}`;
    case 'mine':
      return a.target !== undefined
        ? `mine ${a.quantity ?? 1} ${a.target}`
        : `mine the block at ${a.x} ${a.y} ${a.z}`;
    case 'place':
      return `place ${a.block} at ${a.x} ${a.y} ${a.z}`;
    case 'craft':
      return `craft ${a.recipe} x${a.quantity ?? 1}`;
    case 'smelt':
      return `smelt ${a.quantity} ${a.item}`;
    case 'interact':
      return a.x !== undefined
        ? `interact with ${a.target} at ${a.x} ${a.y} ${a.z}`
        : `interact with the nearest ${a.target}`;
    case 'chat':
      return `chat ${JSON.stringify(a.message)}`;
    case 'open_inventory':
      return 'open the inventory';
  }
}

function num(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(1);
}

const isRecord = (v: unknown): v is Record<string, JsonValue> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A detail value as text: numbers rounded to a tenth, a position as `x y z`, lists comma-separated. */
function valueText(v: JsonValue): string {
  if (typeof v === 'number') return num(v);
  if (typeof v === 'string') return v;
  if (Array.isArray(v))
    return v.every((x) => typeof x === 'number') ? v.map(num).join(' ') : JSON.stringify(v);
  if (isRecord(v) && ['x', 'y', 'z'].every((k) => typeof v[k] === 'number') && Object.keys(v).length === 3)
    return [v['x'], v['y'], v['z']].map((x) => num(x as number)).join(' ');
  return JSON.stringify(v);
}

/**
 * True when `v` only repeats a parameter of the action (`placed: "cobblestone"`, `at: [19, 63, 19]`, `mined: 7`), or
 * is a position inside the action's block (a `goto 30 70 -6` that ended at 30.5 70 -5.5 arrived).
 */
function echoes(v: JsonValue, a: ActionSpec): boolean {
  const params = Object.entries(a).filter(([k]) => k !== 'type');
  if (params.some(([, p]) => p === v)) return true;
  const coords = 'x' in a && 'y' in a && 'z' in a ? [a.x, a.y, a.z] : null;
  if (coords === null) return false;
  const xyz = Array.isArray(v)
    ? v
    : isRecord(v) && Object.keys(v).length === 3
      ? [v['x'], v['y'], v['z']]
      : [];
  return (
    xyz.length === 3 &&
    xyz.every((n, i) => typeof n === 'number' && Math.floor(n) === Math.floor(coords[i] ?? NaN))
  );
}

/** What a successful action's result adds to the action: empty when it only echoes it. */
function okDetail(detail: JsonValue, a: ActionSpec): string {
  if (detail === null || detail === '') return '';
  if (typeof detail === 'string') return detail;
  if (!isRecord(detail)) return valueText(detail);
  return Object.entries(detail)
    .filter(([, v]) => !echoes(v, a))
    .map(([k, v]) => `${k} ${valueText(v)}`)
    .join(', ');
}

/** Why an action failed, once: the error (with a code other than the generic one) or the contradiction. */
function failedDetail(detail: JsonValue): string {
  if (!isRecord(detail)) return valueText(detail);
  if (typeof detail['contradiction'] === 'string')
    return `the state contradicts the plan: ${detail['contradiction']}`;
  const error = typeof detail['error'] === 'string' ? detail['error'] : JSON.stringify(detail);
  const code = detail['code'];
  const extra = [
    ...(typeof code === 'string' && code !== 'action_failed' ? [code] : []),
    ...(detail['timedOut'] === true ? ['timed out'] : []),
  ];
  return extra.length > 0 ? `${error} (${extra.join(', ')})` : error;
}

/** One action's outcome as the conversation shows it: `- place cobblestone at 19 63 19 → done`. */
export function resultLine(r: { action: ActionSpec; ok: boolean; detail: JsonValue }): string {
  if (!r.ok) return `- ${actionText(r.action)} → FAILED: ${failedDetail(r.detail)}`;
  const more = okDetail(r.detail, r.action);
  return `- ${actionText(r.action)} → done${more === '' ? '' : ` (${more})`}`;
}

/**
 * The outcomes as lines, a run of the same action done at several places (a floor of `place cobblestone`) on one
 * line: `- place cobblestone at 19 63 19; 19 63 20; 19 63 21 → done (3)`.
 */
export function resultLines(
  results: readonly { action: ActionSpec; ok: boolean; detail: JsonValue }[],
): string {
  const out: string[] = [];
  let run: { what: string; places: string[] } | null = null;
  const flush = (): void => {
    if (run === null) return;
    const n = run.places.length;
    out.push(`- ${run.what} at ${run.places.join('; ')} → done${n > 1 ? ` (${n})` : ''}`);
    run = null;
  };
  for (const r of results) {
    const text = actionText(r.action);
    const at = text.lastIndexOf(' at ');
    const plain = r.ok && okDetail(r.detail, r.action) === '' && at > 0;
    if (!plain) {
      flush();
      out.push(resultLine(r));
      continue;
    }
    const what = text.slice(0, at);
    const place = text.slice(at + 4);
    if (run !== null && run.what === what) run.places.push(place);
    else {
      flush();
      run = { what, places: [place] };
    }
  }
  flush();
  return out.join('\n');
}

/** The player's vitals and world: the part of the state a message repeats only when it changed. */
export function vitalsText(s: PlayerState): string {
  return `health ${s.health}, hunger ${s.hunger}, saturation ${s.saturation}; dimension ${s.dimension}, game mode ${s.gameMode}`;
}

/**
 * The state for a conversation message: position and inventory always, the vitals when `shownVitals` (what the
 * conversation last showed) differs or is null.
 */
export function stateLine(s: PlayerState, shownVitals: string | null): string {
  const p = s.position;
  const inv = s.inventory.map((i) => `${i.item} x${i.count}`).join(', ') || 'empty';
  const vitals = vitalsText(s);
  return (
    `position ${p.x.toFixed(1)} ${p.y.toFixed(1)} ${p.z.toFixed(1)}; inventory: ${inv}` +
    (vitals === shownVitals ? '' : `; ${vitals}`)
  );
}
