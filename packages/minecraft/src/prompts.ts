import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { MinecraftError } from './minecraft-error.js';

/** Names of the prompt files shipped in `prompts/` (package root). */
export type McPromptName = 'plan' | 'replan' | 'replan-turn' | 'expand' | 'repair' | 'system' | 'turn';

/** A loaded prompt: its text and the version from its front matter (recorded in every model step). */
export interface McPrompt {
  name: McPromptName;
  version: number;
  text: string;
}

const cache = new Map<McPromptName, McPrompt>();

// `src/prompts.ts` (tests) and the bundled `dist/*.js` both sit one level below the package root.
function promptUrl(name: McPromptName): URL {
  return new URL(`../prompts/${name}.md`, import.meta.url);
}

/** Load (once, then cached) a versioned prompt. Throws `MinecraftError('invalid_config')` when it is missing. */
export function loadMcPrompt(name: McPromptName): McPrompt {
  const hit = cache.get(name);
  if (hit) return hit;
  let raw: string;
  try {
    raw = readFileSync(fileURLToPath(promptUrl(name)), 'utf8');
  } catch (cause) {
    throw new MinecraftError('invalid_config', `prompt file ${name}.md not found`, { cause });
  }
  const m = /^---\n([\s\S]*?)\n---\n([\s\S]*)$/.exec(raw.replace(/\r\n/g, '\n'));
  const version = /^version:\s*(\d+)\s*$/m.exec(m?.[1] ?? '');
  if (!m || !version)
    throw new MinecraftError('invalid_config', `prompt ${name}: missing front matter version`);
  const prompt = { name, version: Number(version[1]), text: (m[2] ?? '').trim() };
  cache.set(name, prompt);
  return prompt;
}

/** Fill `{{key}}` placeholders; an unknown one stays visible in the step log. */
export function fillMcPrompt(text: string, vars: Record<string, string>): string {
  return text.replace(/\{\{(\w+)\}\}/g, (whole, key: string) => vars[key] ?? whole);
}
