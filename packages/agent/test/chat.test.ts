// The direct chat mode through the real stack (Engine + in-memory store, the real `ollama` client streaming from the
// fake Ollama server): a chat task answers without tools, its reply reaches `onDelta` piece by piece as the server
// streams it, and a follow-up message to the completed task continues the same conversation.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Engine, InMemoryTaskStore, type Task } from '@ccagent/engine';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createChatStrategy } from '../src/index.js';
import { loadPrompt } from '../src/prompts.js';
import { createLuaToolExecutor, startModels } from '@ccagent/agent/testing';

let models: Awaited<ReturnType<typeof startModels>>;
beforeAll(async () => {
  models = await startModels();
});
afterAll(async () => {
  await models.close();
});

type WireMessage = { role: string; content: string };

it('answers without tools, streams the reply to onDelta as it arrives, and a message to the finished chat continues the conversation (guards: a chat reply only seen whole, every prompt a new conversation)', async () => {
  const root = await mkdtemp(path.join(tmpdir(), 'ccagent-chat-'));
  models.fake.script('chat-model', [
    { content: 'A turtle is a small robot that can dig, build and move.', chunkChars: 6 },
    { content: 'Use turtle.dig() to mine the block in front of it.', chunkChars: 6 },
  ]);
  const pieces: Array<{ taskId: string; text: string }> = [];
  const strategy = createChatStrategy({
    model: models.role('chat-model', {
      onDelta: (d: { content?: string }, meta: { taskId: string }) => {
        if (d.content) pieces.push({ taskId: meta.taskId, text: d.content });
      },
    }),
  });
  const engine = new Engine({
    store: new InMemoryTaskStore(),
    strategies: { chat: strategy },
    executor: createLuaToolExecutor({ root }),
    tickIntervalMs: 0,
  });
  const ended = (id: string, after: number) =>
    new Promise<Task>((resolve) => {
      const off = engine.on('taskUpdated', ({ task }) => {
        if (task.id === id && task.status === 'completed' && task.updatedAt >= after) {
          off();
          resolve(task);
        }
      });
    });
  await engine.start();
  try {
    const task = await engine.createTask({ kind: 'chat', prompt: 'What is a turtle?', clientId: null });
    const first = await ended(task.id, 0);
    expect(first.result).toMatchObject({
      message: 'A turtle is a small robot that can dig, build and move.',
    });
    // Streamed in the server's pieces, in order, before the task completed.
    expect(pieces.length).toBeGreaterThan(5);
    expect(pieces.every((p) => p.taskId === task.id)).toBe(true);
    expect(pieces.map((p) => p.text).join('')).toBe(
      'A turtle is a small robot that can dig, build and move.',
    );
    const [req1] = models.fake.chatRequests('chat-model');
    const body1 = req1?.body as { messages: WireMessage[]; tools?: unknown[]; stream?: boolean };
    expect(body1.tools ?? []).toEqual([]);
    expect(body1.stream).not.toBe(false);
    expect(body1.messages[0]).toEqual({ role: 'system', content: loadPrompt('chat-system').text });

    pieces.length = 0;
    const before = Date.now();
    const again = ended(task.id, before);
    await engine.reopenTask(task.id, {
      reason: 'message',
      budgets: {},
      entries: [{ type: 'message', text: 'How do I make it mine?' }],
    });
    const second = await again;
    expect(second.id).toBe(task.id);
    expect(second.result).toMatchObject({ message: 'Use turtle.dig() to mine the block in front of it.' });
    expect(pieces.map((p) => p.text).join('')).toBe('Use turtle.dig() to mine the block in front of it.');
    // The second request carries the whole conversation: the question, the first answer, then the new message.
    const body2 = models.fake.chatRequests('chat-model')[1]?.body as { messages: WireMessage[] };
    const contents = body2.messages.map((m) => `${m.role}: ${m.content}`);
    const q = contents.indexOf('user: What is a turtle?');
    const a = contents.indexOf('assistant: A turtle is a small robot that can dig, build and move.');
    const m = contents.indexOf('user: How do I make it mine?');
    expect(q).toBeGreaterThan(0);
    expect(a).toBeGreaterThan(q);
    expect(m).toBeGreaterThan(a);
  } finally {
    await engine.stop();
    await rm(root, { recursive: true, force: true });
  }
});
