#!/usr/bin/env node
// Turns a step log dumped by the acceptance test into the worked example of docs/agent.md:
//   AGENT_DUMP_STEPS=/tmp/steps.json npx vitest run test/fixes-broken-todo.test.ts -t "step log"
//   node test/support/worked-example.mjs /tmp/steps.json
// Prints a one-line-per-record table and a few records in full; long strings are cut (…), nothing else changes.
import { readFileSync } from 'node:fs';

const steps = JSON.parse(readFileSync(process.argv[2] ?? '/tmp/steps.json', 'utf8'));

const short = (s, n = 160) => {
  const t = typeof s === 'string' ? s : JSON.stringify(s);
  return t.length <= n ? t : `${t.slice(0, n)}… [${t.length - n} more chars]`;
};

/** Keep the first `keep` lines of every fenced block. */
function clipFences(text, keep = 4) {
  const out = [];
  let inside = false;
  let count = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) {
      if (inside && count > keep) out.push(`… (${count - keep} more lines)`);
      inside = !inside;
      count = 0;
      out.push(line);
    } else if (inside) {
      if (++count <= keep) out.push(line);
    } else out.push(line);
  }
  return out.join('\n');
}

function summary(s) {
  switch (s.kind) {
    case 'planner':
    case 'executor':
    case 'executor_repair': {
      const d = s.directive ?? {};
      const what = s.kind === 'planner' ? d.kind : d.kind === 'tool' ? d.call?.tool : d.kind;
      const extra = s.validationErrors ? `; ${s.validationErrors.join(', ')}` : '';
      return `\`${s.model}\` → ${what}; ${s.usage?.promptTokens} prompt / ${s.usage?.completionTokens} reply tokens${extra}`;
    }
    case 'decision': {
      const d = s.directive;
      if (d.type !== 'tool_call') return d.type;
      return `tool_call \`${[d.command, d.args?.path, ...(d.args?.args ?? [])].filter(Boolean).join(' ')}\``;
    }
    case 'tool_result': {
      const r = s.toolResult;
      if (!r.ok) return `error: ${r.error.message}`;
      if (r.result && typeof r.result === 'object' && 'ok' in r.result) {
        return r.result.ok
          ? `ok: ${short(r.result.output.replaceAll('\n', ' / '), 60)}`
          : `program failed: ${short(r.result.error.split('\n')[0], 70)}`;
      }
      return 'ok';
    }
    case 'gather':
    case 'queued_run': {
      const a = s.toolCall.args;
      return `\`${[s.toolCall.command, a.path, ...(a.args ?? [])].join(' ')}\``;
    }
    case 'policy':
      return `${s.error.code}: ${short(s.error.message, 90)}`;
    default:
      return '';
  }
}

function modelRecord(s) {
  const input = {
    messages: s.input.messages.map((m) => ({
      role: m.role,
      content: m.role === 'system' ? short(m.content, 100) : short(clipFences(m.content), 300),
    })),
  };
  for (const k of ['options', 'format', 'prompt']) if (s.input[k] !== undefined) input[k] = s.input[k];
  const directive = s.directive ? structuredClone(s.directive) : undefined;
  if (directive?.content) directive.content = short(directive.content, 50);
  if (directive?.call?.parameters?.content)
    directive.call.parameters.content = short(directive.call.parameters.content, 50);
  return {
    kind: s.kind,
    model: s.model,
    input,
    output: { content: short(clipFences(s.output.content, 3), 400), doneReason: s.output.doneReason },
    ...(directive ? { directive } : {}),
    ...(s.validationErrors ? { validationErrors: s.validationErrors } : {}),
    startedAt: s.startedAt,
    durationMs: s.durationMs,
    usage: s.usage,
  };
}

const json = (v) => `\`\`\`json\n${JSON.stringify(v, null, 2)}\n\`\`\``;

console.log('| seq | step | kind | what |\n| --- | --- | --- | --- |');
for (const s of steps)
  console.log(`| ${s.seq} | ${s.step} | ${s.kind} | ${summary(s).replaceAll('|', '\\|')} |`);

const firstPlanner = steps.find((s) => s.kind === 'planner');
const firstExecutor = steps.find((s) => s.kind === 'executor');
const skipped = steps.find((s) => s.kind === 'policy' && s.error?.code === 'runs_skipped');
const failedBeforeSkip = [...steps]
  .filter((s) => s.kind === 'tool_result' && s.seq < (skipped?.seq ?? 0))
  .pop();
const plannerAfterSkip = steps.find((s) => s.kind === 'planner' && s.seq > (skipped?.seq ?? 0));
const final = steps.at(-1);

console.log(`\nThe planner's first call (seq ${firstPlanner.seq}):\n\n${json(modelRecord(firstPlanner))}`);
console.log(
  `\nThe executor's translation (seq ${firstExecutor.seq}):\n\n${json(modelRecord(firstExecutor))}`,
);
if (failedBeforeSkip) {
  const { kind, toolCall, toolResult, durationMs } = failedBeforeSkip;
  console.log(
    `\nA failing run (seq ${failedBeforeSkip.seq}):\n\n${json({ kind, toolCall, toolResult, durationMs })}`,
  );
}
if (plannerAfterSkip) {
  const memory = clipFences(plannerAfterSkip.input.messages[1].content, 6);
  console.log(`\nThe memory the planner saw next (seq ${plannerAfterSkip.seq}):\n\n~~~text\n${memory}\n~~~`);
}
const decision = structuredClone(final.directive);
delete decision.memory; // logs written before decision records fingerprinted the memory carried all of it
console.log(`\nThe final decision (seq ${final.seq}):\n\n${json({ kind: final.kind, directive: decision })}`);
