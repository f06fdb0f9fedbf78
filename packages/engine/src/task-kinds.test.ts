import { describe, expect, it } from 'vitest';
import {
  allowedCommandsFor,
  resolveRunBudgets,
  resolveTaskKind,
  taskKindNames,
  type TaskKindCatalogue,
  type TaskKindRules,
} from './task-kinds.js';

const PLANNER_ONLY = [
  { setting: 'executor_mode', appliesTo: 'planner_executor tasks' },
  { setting: 'interactive', appliesTo: 'planner_executor tasks' },
  { setting: 'completion', appliesTo: 'planner_executor tasks' },
] as const;

/** Two kinds like the orchestrator's defaults, an alias, and tight operator maximums. */
const CATALOGUE: TaskKindCatalogue = {
  kinds: {
    general_agent: {
      strategy: 'native',
      allowedCommands: [],
      budgets: { maxSteps: 40, maxToolCalls: 60, deadlineMs: 3_600_000 },
      modelRoles: ['native'],
      unusedSettings: PLANNER_ONLY,
    },
    code_job: {
      strategy: 'planner_executor',
      allowedCommands: ['fs_read', 'fs_write', 'run_program'],
      budgets: { maxSteps: 60, maxToolCalls: 80, maxOutputTokens: 4000 },
      modelRoles: ['planner', 'executor'],
      unusedSettings: [{ setting: 'budgets.max_model_calls', appliesTo: 'native and chat tasks' }],
    },
  },
  aliases: { general: 'general_agent', lost: 'no_such_kind' },
  limits: {
    maxSteps: 100,
    maxToolCalls: 200,
    maxModelCalls: 50,
    maxPromptTokens: 10_000,
    maxOutputTokens: 5_000,
    maxDeadlineMs: 7_200_000,
    maxNumCtx: 32_768,
    maxTemperature: 1,
    models: ['qwen3:8b', 'qwen3:8b', 'llama3.2:3b'],
  },
  providers: ['ollama', 'ollama', 'ollama'],
};

const general = CATALOGUE.kinds['general_agent'] as TaskKindRules;
const code = CATALOGUE.kinds['code_job'] as TaskKindRules;

describe('resolveTaskKind', () => {
  it('maps a kind to itself and an alias to its kind; an unknown name, an inherited key or a dangling alias to nothing (guards against a task of a kind no strategy runs)', () => {
    expect(resolveTaskKind(CATALOGUE, 'code_job')).toBe('code_job');
    expect(resolveTaskKind(CATALOGUE, 'general')).toBe('general_agent');
    expect(resolveTaskKind(CATALOGUE, 'tree_farm')).toBeUndefined();
    expect(resolveTaskKind(CATALOGUE, 'toString')).toBeUndefined();
    expect(resolveTaskKind(CATALOGUE, 'lost')).toBeUndefined();
    expect(taskKindNames(CATALOGUE)).toEqual(['general_agent', 'code_job', 'general', 'lost']);
  });
});

describe('allowedCommandsFor', () => {
  it("intersects a requested allow-list with the kind's, keeps the kind's when none is requested, refuses one wholly outside (guards against a task calling a command its kind forbids)", () => {
    expect(allowedCommandsFor(code, [])).toEqual(['fs_read', 'fs_write', 'run_program']);
    expect(allowedCommandsFor(code, ['fs_read', 'shell_exec', 'run_program'])).toEqual([
      'fs_read',
      'run_program',
    ]);
    expect(allowedCommandsFor(code, ['shell_exec', 'fs_delete'])).toBeUndefined();
  });

  it('passes the request through for a kind that allows any command', () => {
    expect(allowedCommandsFor(general, [])).toEqual([]);
    expect(allowedCommandsFor(general, ['shell_exec'])).toEqual(['shell_exec']);
  });
});

describe('resolveRunBudgets', () => {
  it("gives the kind's budgets without settings, and the request's within the maximums", () => {
    expect(resolveRunBudgets(CATALOGUE, 'code_job', code, undefined)).toEqual({
      ok: true,
      value: { maxSteps: 60, maxToolCalls: 80, maxOutputTokens: 4000 },
    });
    expect(
      resolveRunBudgets(CATALOGUE, 'code_job', code, {
        budgets: { max_steps: 100, deadline_ms: 60_000, max_prompt_tokens: 9_000 },
      }),
    ).toEqual({
      ok: true,
      value: {
        maxSteps: 100,
        maxToolCalls: 80,
        deadlineMs: 60_000,
        maxPromptTokens: 9_000,
        maxOutputTokens: 4000,
      },
    });
  });

  it('refuses a budget or a sampling value above an operator maximum, naming the field and the limit (guards against a request outgrowing what the operator allows)', () => {
    expect(resolveRunBudgets(CATALOGUE, 'code_job', code, { budgets: { max_steps: 101 } })).toEqual({
      ok: false,
      error: {
        code: 'forbidden',
        path: '$.settings.budgets.max_steps',
        message: "max_steps 101 is above the server's maximum 100 (limits.maxSteps)",
      },
    });
    expect(
      resolveRunBudgets(CATALOGUE, 'general_agent', general, { budgets: { deadline_ms: 7_200_001 } }),
    ).toMatchObject({ ok: false, error: { code: 'forbidden', path: '$.settings.budgets.deadline_ms' } });
    expect(resolveRunBudgets(CATALOGUE, 'general_agent', general, { temperature: 1.5 })).toEqual({
      ok: false,
      error: {
        code: 'forbidden',
        path: '$.settings.temperature',
        message: "temperature 1.5 is above the server's maximum 1 (limits.maxTemperature)",
      },
    });
    expect(resolveRunBudgets(CATALOGUE, 'general_agent', general, { num_ctx: 65_536 })).toMatchObject({
      ok: false,
      error: { code: 'forbidden', path: '$.settings.num_ctx' },
    });
  });

  it('refuses a model for a role the kind does not call, a model the operator did not allow, an unconfigured provider', () => {
    expect(
      resolveRunBudgets(CATALOGUE, 'general_agent', general, { models: { planner: 'qwen3:8b' } }),
    ).toEqual({
      ok: false,
      error: {
        code: 'invalid_field',
        path: '$.settings.models.planner',
        message: 'task kind "general_agent" (native) uses no planner model; it uses: native',
      },
    });
    expect(resolveRunBudgets(CATALOGUE, 'code_job', code, { models: { planner: 'huge:70b' } })).toEqual({
      ok: false,
      error: {
        code: 'forbidden',
        path: '$.settings.models.planner',
        message: 'model "huge:70b" is not allowed by the server (limits.models): qwen3:8b, llama3.2:3b',
      },
    });
    expect(resolveRunBudgets(CATALOGUE, 'code_job', code, { models: { executor: 'llama3.2:3b' } }).ok).toBe(
      true,
    );
    expect(resolveRunBudgets(CATALOGUE, 'code_job', code, { provider: 'openai-compatible' })).toEqual({
      ok: false,
      error: {
        code: 'invalid_field',
        path: '$.settings.provider',
        message: 'no model role is configured with provider "openai-compatible"',
      },
    });
  });

  it("refuses a setting the kind's strategy does not use (guards against a setting silently ignored)", () => {
    expect(resolveRunBudgets(CATALOGUE, 'general_agent', general, { interactive: true })).toEqual({
      ok: false,
      error: {
        code: 'invalid_field',
        path: '$.settings.interactive',
        message: 'interactive applies to planner_executor tasks; "general_agent" is native',
      },
    });
    expect(resolveRunBudgets(CATALOGUE, 'code_job', code, { budgets: { max_model_calls: 5 } })).toEqual({
      ok: false,
      error: {
        code: 'invalid_field',
        path: '$.settings.budgets.max_model_calls',
        message: 'max_model_calls applies to native and chat tasks; "code_job" is planner_executor',
      },
    });
    expect(
      resolveRunBudgets(CATALOGUE, 'general_agent', general, { budgets: { max_model_calls: 5 } }).ok,
    ).toBe(true);
    expect(
      resolveRunBudgets(CATALOGUE, 'code_job', code, { executor_mode: 'parser', interactive: true }).ok,
    ).toBe(true);
  });
});
