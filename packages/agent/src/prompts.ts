import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { AgentError } from './agent-error.js';

/** Names of the prompt files shipped in `prompts/` (package root). */
export type PromptName =
  | 'planner'
  | 'executor'
  | 'executor-repair'
  | 'native-system'
  | 'native-final-summary'
  | 'chat-system'
  | 'planner-tools';

/** A loaded prompt: its text and the version declared in its front matter (recorded in every step log). */
export interface Prompt {
  name: PromptName;
  version: number;
  text: string;
}

const cache = new Map<PromptName, Prompt>();

// Prompts are read at run time from `<package>/prompts/*.md`, relative to this module. Both `src/prompts.ts`
// (tests) and the bundled `dist/index.{js,cjs}` sit one level below the package root, so `../prompts/` resolves
// the same in source, ESM and CJS builds (tsup `shims` provides `import.meta.url` in CJS).
function promptUrl(name: PromptName): URL {
  return new URL(`../prompts/${name}.md`, import.meta.url);
}

/** Parse a prompt file: `---\nname: x\nversion: N\n---\n<text>`. Exported for tests of the file format. */
export function parsePromptFile(name: PromptName, raw: string): Prompt {
  const m = /^---\n([\s\S]*?)\n---\n([\s\S]*)$/.exec(raw.replace(/\r\n/g, '\n'));
  if (!m) throw new AgentError('prompt_not_found', `prompt ${name}: missing front matter`);
  const version = /^version:\s*(\d+)\s*$/m.exec(m[1] ?? '');
  if (!version) throw new AgentError('prompt_not_found', `prompt ${name}: front matter has no version`);
  return { name, version: Number(version[1]), text: (m[2] ?? '').trim() };
}

/** Load (once, then cached) a versioned prompt shipped with the package. Throws `AgentError('prompt_not_found')`. */
export function loadPrompt(name: PromptName): Prompt {
  const hit = cache.get(name);
  if (hit) return hit;
  let raw: string;
  try {
    raw = readFileSync(fileURLToPath(promptUrl(name)), 'utf8');
  } catch (cause) {
    throw new AgentError('prompt_not_found', `prompt file ${name}.md not found`, { cause });
  }
  const prompt = parsePromptFile(name, raw);
  cache.set(name, prompt);
  return prompt;
}

/** Fill `{{key}}` placeholders. An unknown placeholder is left as is so a typo is visible in the step log. */
export function fillTemplate(text: string, vars: Record<string, string>): string {
  return text.replace(/\{\{(\w+)\}\}/g, (whole, key: string) => vars[key] ?? whole);
}
