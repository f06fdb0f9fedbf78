import type { FakeChatRequest, FakeReply } from './fake-types.js';

/** Replies for one conversation: made on its first request, then called for each of its requests in turn. */
export type MarkerScript = (request: FakeChatRequest) => FakeReply;

/** What {@link scriptByMarker} returns: register scripts by name in `scripts`, hand `script` to `fake.script()`. */
export interface ScriptsByMarker {
  /** Per name, a maker of that conversation's script (called once, on the name's first request). */
  readonly scripts: Map<string, () => MarkerScript>;
  /** The script function for `fake.script(model, script)`. */
  readonly script: (request: FakeChatRequest) => FakeReply;
}

/**
 * A model script that picks its replies by a marker in the conversation, for a suite whose tests each start their own
 * task on one shared server: a request whose messages contain `#<prefix>:<name>#` (put in the task's prompt) is
 * answered by the script registered under `<name>`. That script is made on the name's first request and kept for the
 * rest, so each task follows its own script from its first step, whatever else runs. A request with no marker, or
 * with a name nothing is registered under, gets `fallback`.
 *
 *     const { scripts, script } = scriptByMarker('dash', 'DONE');
 *     fake.script(MODEL, script);
 *     scripts.set('live', () => { let i = 0; return () => `reply ${++i}`; });
 *     // a task prompted "#dash:live# …" now gets "reply 1", "reply 2", …
 */
export function scriptByMarker(prefix: string, fallback: FakeReply): ScriptsByMarker {
  const scripts = new Map<string, () => MarkerScript>();
  const running = new Map<string, MarkerScript>();
  const marker = new RegExp(`#${prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:([a-z0-9-]+)#`);
  return {
    scripts,
    script(request) {
      const messages = (request.body['messages'] ?? []) as { content?: unknown }[];
      const all = messages
        .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? '')))
        .join('\n');
      const name = marker.exec(all)?.[1];
      if (name === undefined) return fallback;
      let s = running.get(name);
      if (!s) {
        const make = scripts.get(name);
        if (!make) return fallback;
        s = make();
        running.set(name, s);
      }
      return s(request);
    },
  };
}
