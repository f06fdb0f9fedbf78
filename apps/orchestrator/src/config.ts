/**
 * The orchestrator's configuration: task kinds (strategy, allowed commands, budgets, completion criteria, system
 * prompt), the models per role, and server limits. Built-in defaults, deep-merged with an optional JSON file and
 * environment overrides, then validated by one zod schema whose errors name the exact path
 * (`taskKinds.code_job.budgets.maxSteps: expected number, received string`).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { resolveTaskKind } from '@ccagent/engine';
import { CC_TASK_COMMANDS, DEFAULT_INPUT_LIMITS } from '@ccagent/protocol';
import { z } from 'zod';
import { kindModelIssues } from './kind-models.js';
import { OrchestratorError } from './orchestrator-error.js';

const positiveInt = z.number().int().positive();

/** Sampling options of one model (Ollama names, camelCase). */
const modelOptionsSchema = z.strictObject({
  temperature: z.number().min(0).max(2).optional(),
  numCtx: positiveInt.optional(),
  numPredict: z.number().int().optional(),
  seed: z.number().int().optional(),
  topP: z.number().min(0).max(1).optional(),
  stop: z.array(z.string()).optional(),
});

/** One server of a role's pool (`models.<role>.servers`): the same model on another GPU box. */
const poolServerSchema = z.strictObject({
  /** Server base URL (`http://gpu2:11434`, or `http://gpu3:8080/v1` for an OpenAI-compatible server). */
  baseUrl: z.url({ protocol: /^https?$/ }),
  /** `ollama` or `openai-compatible`; default: the role's `provider`. */
  provider: z.enum(['ollama', 'openai-compatible']).optional(),
  /** Name of the environment variable holding this server's API key. */
  apiKeyEnv: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name')
    .optional(),
  /** Calls sent to this server at once: what its GPU generates in parallel (`OLLAMA_NUM_PARALLEL`). */
  concurrency: positiveInt.default(1),
});

/** How a role's pool of `servers` places calls and watches its servers (docs/models.md, "A pool of servers"). */
const poolSchema = z.strictObject({
  /**
   * Longest a task's call waits for the server that served its previous call (whose prompt cache is warm) before it
   * goes to another server (ms). Also the longest expected wait for which it stays.
   */
  affinityWaitMs: z.number().int().min(0).default(2_000),
  /** Period of health probes (`/api/version` + `/api/tags`, or `/v1/models`) of servers that are up (ms; 0 = off). */
  probeIntervalMs: z.number().int().min(0).default(15_000),
  /** First wait before a failed server is probed again (ms); doubles per failed probe. */
  probeBackoffMs: positiveInt.default(1_000),
  /** Longest wait between probes of a failed server (ms). */
  maxProbeBackoffMs: positiveInt.default(60_000),
});

/** Defaults of a role's `pool` settings. */
const POOL_DEFAULTS = {
  affinityWaitMs: 2_000,
  probeIntervalMs: 15_000,
  probeBackoffMs: 1_000,
  maxProbeBackoffMs: 60_000,
};

/** One model role: which model, on which provider, and how to call it. */
const modelSchema = z.strictObject({
  name: z.string().min(1),
  /** `ollama` (native `/api/chat`) or `openai-compatible` (`/v1/chat/completions`, e.g. llama.cpp, vLLM, LM Studio). */
  provider: z.enum(['ollama', 'openai-compatible']).default('ollama'),
  /** Server base URL; defaults to `--ollama-url` for `ollama`; required for `openai-compatible`. */
  baseUrl: z.url({ protocol: /^https?$/ }).optional(),
  /** Name of the environment variable holding the API key (never the key itself: config files get shared). */
  apiKeyEnv: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name')
    .optional(),
  options: modelOptionsSchema.default({}),
  think: z.boolean().optional(),
  keepAlive: z.union([z.string(), z.number()]).optional(),
  /** Bound of one chat call, retries included (ms). */
  timeoutMs: positiveInt.default(300_000),
  /**
   * Streamed replies: longest silence between two chunks before the attempt is cut (`model_stalled`) and retried
   * within `timeoutMs` (ms; `0` = off).
   */
  stallTimeoutMs: z.number().int().min(0).default(60_000),
  /**
   * Streamed replies: longest wait for the first chunk — model load and prompt evaluation included — before the
   * attempt is cut (`model_stalled`) and retried within `timeoutMs` (ms; `0` = off).
   */
  firstChunkTimeoutMs: z.number().int().min(0).default(300_000),
  /**
   * Several servers of this model (a pool) instead of `baseUrl`: a task's calls stay on the server whose prompt
   * cache holds its conversation, new tasks go to the least-loaded one, a failing server is taken out and a call it
   * cut is sent once to another (docs/models.md, "A pool of servers").
   */
  servers: z.array(poolServerSchema).min(1).optional(),
  pool: poolSchema.default(POOL_DEFAULTS),
});

const budgetsSchema = z.strictObject({
  maxSteps: positiveInt.optional(),
  maxToolCalls: positiveInt.optional(),
  /** Prompt tokens one run may use, summed from the model server's reported counts (`prompt_eval_count`). */
  maxPromptTokens: positiveInt.optional(),
  /** Output tokens one run may use, summed from the model server's reported counts (`eval_count`). */
  maxOutputTokens: positiveInt.optional(),
  /** Wall-clock budget from creation (ms); becomes the task's `deadlineAt`. */
  deadlineMs: positiveInt.optional(),
});

/** What a resident task may use in one hour or one day (see docs/agents.md). */
const periodLimitSchema = z.strictObject({
  maxSteps: positiveInt.optional(),
  maxToolCalls: positiveInt.optional(),
  /** Prompt plus output tokens, from the model server's counts. */
  maxTokens: positiveInt.optional(),
});

/** When a DONE is believed (planner/executor strategy); mirrors `@ccagent/agent`'s `CompletionCriteria`. */
const completionSchema = z.strictObject({
  /** A program run must have succeeded after the last file write. */
  requireSuccessfulRun: z.boolean().optional(),
  /** The most recent run must have succeeded. */
  requireLastRunOk: z.boolean().optional(),
  /** Commands that must each have succeeded at least once. */
  requiredCommands: z.array(z.string().min(1)).optional(),
  /** Program runs that must have succeeded after the last write of their file. */
  requiredRuns: z
    .array(z.strictObject({ path: z.string().min(1), args: z.array(z.string()).optional() }))
    .optional(),
});

/** A regular expression given as a string (compiled case-insensitively); a bad one is refused at load. */
const regexString = z
  .string()
  .min(1)
  .refine(
    (src) => {
      try {
        new RegExp(src, 'i');
        return true;
      } catch {
        return false;
      }
    },
    { message: 'not a valid regular expression' },
  );

/**
 * Which calls of a kind wait for a person's yes (the computer's user or an operator) before they are sent: every
 * call of `commands`; `fs_write`, `fs_delete` and `fs_move` touching a path outside `sandbox`; `shell_exec` command
 * lines (and `run_program` path + arguments) matching one of `shellPatterns`. A refusal is the call's result.
 */
const confirmSchema = z.strictObject({
  commands: z.array(z.string().min(1)).default([]),
  sandbox: z.string().startsWith('/', 'an absolute path on the computer, like "/work"').optional(),
  shellPatterns: z.array(regexString).default([]),
});

/**
 * One role's model for a kind (docs/configuration.md, "A kind's own models"): a model name the operator allows
 * (`limits.models`) and a server the configuration already declares — never a URL.
 */
const kindModelSchema = z.strictObject({
  /** Model name; one of `limits.models` (default: the names the roles configure). */
  name: z.string().min(1).optional(),
  /** `ollama` or `openai-compatible`: the first role configured with it serves the calls (unless `endpoint`). */
  provider: z.enum(['ollama', 'openai-compatible']).optional(),
  /** The role whose configured server (URL or pool, key, provider) serves the calls. */
  endpoint: z.enum(['planner', 'executor', 'native']).optional(),
});

export const taskKindSchema = z.strictObject({
  description: z.string().optional(),
  /**
   * `planner_executor`, `native` (tool calling), or `chat`: the direct chat mode, which answers without tools and
   * streams its reply (`task_update.delta`); chat kinds use the `native` model role's configuration.
   */
  strategy: z.enum(['planner_executor', 'native', 'chat']),
  /**
   * Planner/executor only: how a directive becomes a tool call — `parser` (deterministic), `model` (the executor
   * model, JSON constrained by a schema), or `parser-then-model` (the parser first, the model when it cannot).
   */
  executorMode: z.enum(['parser', 'model', 'parser-then-model']).default('parser-then-model'),
  /** Commands tasks of this kind may call; empty = any command the client registered. */
  allowedCommands: z.array(z.string().min(1)).default([]),
  budgets: budgetsSchema.default({}),
  /** Planner/executor only: conditions checked against the history before a DONE is accepted. */
  completion: completionSchema.optional(),
  /**
   * Planner/executor only: overrides of the agent policy (`maxQuestions`, `duplicateThreshold`, `memory.numCtx` …;
   * see docs/agent.md). Checked by the agent at startup.
   */
  policy: z.record(z.string(), z.unknown()).optional(),
  /**
   * Planner/executor: extra instructions appended to the planner's system prompt. Native: replaces the shipped
   * system prompt (leave unset to keep it).
   */
  systemPrompt: z.string().optional(),
  /** Same as `systemPrompt`, read from a file (relative to the config file). */
  systemPromptFile: z.string().optional(),
  /** Planner/executor only: lift the question limit (a person is expected to be watching). */
  interactive: z.boolean().default(false),
  /**
   * Planner/executor only: strict executor replies — any deviation from exactly one bare JSON object (a fence, a
   * trailing comma, `args` as a string …) is repaired, then bounced, instead of tolerated and logged. Default false
   * (docs/agent.md, "The executor", says why).
   */
  strict: z.boolean().default(false),
  /** Native: model calls per run before it ends with a summary (`max_iterations`); chat: per reply (default 3). */
  maxIterations: positiveInt.optional(),
  /** Native only: timeout of each tool call (ms); default the command's own or `server.commandTimeoutMs`. */
  toolTimeoutMs: positiveInt.optional(),
  /**
   * Native only: offer the `wait` tool, so the model can sleep until an event for the task or a time (a long-lived
   * kind: "every 10 minutes check the farm"). Give such a kind budgets of hours or days and a large `maxIterations`.
   */
  waitTool: z.boolean().default(false),
  /**
   * Budgets per hour and per day (a resident kind: agents that live for days). A task that used one sleeps until the
   * window ends instead of failing; see docs/agents.md.
   */
  periodBudgets: z
    .strictObject({ hour: periodLimitSchema.optional(), day: periodLimitSchema.optional() })
    .optional(),
  /** Destructive calls that wait for a person's yes first (see docs/configuration.md, "Confirming destructive commands"). */
  confirm: confirmSchema.optional(),
  /**
   * This kind's model and server per role, over `models.<role>` (a task's own `settings` win over them). Chat kinds
   * set `native`. See docs/configuration.md, "A kind's own models".
   */
  models: z
    .strictObject({
      planner: kindModelSchema.optional(),
      executor: kindModelSchema.optional(),
      native: kindModelSchema.optional(),
    })
    .optional(),
});

/** Server-side tools (seed 004): run in the orchestrator, offered beside the computers' commands. */
const serverToolsSchema = z.strictObject({
  /** Offer the built-ins `echo`, `get_time` and `get_system_info`. */
  builtIns: z.boolean().default(true),
  /** JavaScript or TypeScript modules exporting tools (`default`: a tool or a list; or `tools`: a list), relative to the config file. */
  modules: z.array(z.string().min(1)).default([]),
  /** Timeout of a tool that sets none, seconds. */
  timeoutSeconds: z.number().positive().max(86_400).default(30),
});

export const kindName = z.string().regex(/^[a-z][a-z0-9_]*$/, 'task kind names are lower_snake_case');

const serverSchema = z.strictObject({
  /** Largest WebSocket frame in bytes; bigger messages travel as protocol `chunk`s (CC:Tweaked's default). */
  maxMessageBytes: z.number().int().min(1024).default(131_072),
  /** Interval of server pings (ms); a welcomed socket silent for more than two intervals is terminated. */
  heartbeatMs: z.number().int().min(100).default(15_000),
  /** How long a disconnected client's tasks keep waiting for it to come back (ms). */
  reconnectGraceMs: z.number().int().min(0).default(30_000),
  /** Default timeout of a command call (ms); a command's own `timeout_ms` wins. */
  commandTimeoutMs: positiveInt.default(60_000),
  /** Per-client token bucket: sustained messages per second and burst size. */
  rateLimit: z
    .strictObject({ messagesPerSecond: z.number().positive().default(50), burst: positiveInt.default(200) })
    .default({ messagesPerSecond: 50, burst: 200 }),
  /** A socket whose unsent buffer exceeds this many bytes is closed as a slow consumer. */
  maxBufferedBytes: positiveInt.default(4 * 1024 * 1024),
  /** A connection that has not sent a valid `hello` after this long is closed (ms). */
  helloTimeoutMs: positiveInt.default(10_000),
  /**
   * Most bytes a connection may send before its `hello` is accepted: the hello itself (one frame, or chunks) and
   * nothing else is buffered for a caller nobody has authenticated; more closes the socket (1009).
   */
  maxHelloBytes: z
    .number()
    .int()
    .min(1024)
    .default(512 * 1024),
  /** Most WebSocket connections open at once from one remote address (a Minecraft server's computers share one). */
  maxConnectionsPerAddress: positiveInt.default(256),
  /** Most connections from one remote address that have not completed their `hello` yet. */
  maxUnauthenticatedPerAddress: positiveInt.default(16),
  /**
   * What may enter, the same on every entry point (HTTP, this WebSocket, the Minecraft mod endpoint); see
   * docs/configuration.md, "Input limits".
   */
  inputLimits: z
    .strictObject({
      /** Largest HTTP body, and WebSocket message reassembled from chunks other than a `command_result` (bytes). */
      maxRequestBytes: z.number().int().min(1024).default(DEFAULT_INPUT_LIMITS.maxRequestBytes),
      /** Largest `command_result` (a command's output) reassembled from chunks (bytes). */
      maxToolOutputBytes: z.number().int().min(1024).default(DEFAULT_INPUT_LIMITS.maxToolOutputBytes),
      /** Longest task prompt (UTF-8 bytes). */
      maxPromptBytes: positiveInt.default(DEFAULT_INPUT_LIMITS.maxPromptBytes),
      /** Largest task `context`, as JSON (bytes). */
      maxContextBytes: positiveInt.default(DEFAULT_INPUT_LIMITS.maxContextBytes),
      /** Deepest nesting of arrays/objects in a body, a message or a context. */
      maxDepth: z.number().int().min(4).max(1000).default(DEFAULT_INPUT_LIMITS.maxDepth),
    })
    .default({ ...DEFAULT_INPUT_LIMITS }),
  /**
   * What happens to a command call whose client stays away past the grace period: `fail` (the call fails with
   * `client_disconnected` and the strategy decides what next) or `wait` (it stays pending until the client returns
   * or the call's own timeout fires).
   */
  disconnectPolicy: z.enum(['fail', 'wait']).default('fail'),
  /** Let a client create, read, answer or cancel tasks bound to another client (off: each client sees its own). */
  crossClientAccess: z.boolean().default(false),
  /**
   * A player's computers that may create tasks for each other and follow and steer them, without crossClientAccess
   * (docs/agents.md): `named` groups of client ids, and with `byOperatorKey` the computers connected with the same
   * operator key (the shared token, or one operator key) right now.
   */
  groups: z
    .strictObject({
      named: z
        .record(
          z.string().regex(/^[A-Za-z0-9._:@+-]{1,64}$/, 'group names: letters, digits and . _ - : @ +'),
          z.array(z.string().regex(/^[A-Za-z0-9._:@+-]{1,200}$/, 'a client id')),
        )
        .default({}),
      byOperatorKey: z.boolean().default(false),
    })
    .default({ named: {}, byOperatorKey: false }),
  /**
   * Server-side limit on what in-game triggers send (a `task_event` or `create_task` carrying `trigger`): per
   * computer and trigger name, `perMinute` on average with bursts of `burst`; more is refused as `rate_limited`.
   */
  triggerRateLimit: z
    .strictObject({ perMinute: z.number().positive().default(30), burst: positiveInt.default(10) })
    .default({ perMinute: 30, burst: 10 }),
  /** Who may reach the server and how computers prove who they are (docs/security.md). */
  security: z
    .strictObject({
      /**
       * Host names accepted in the `Host` header besides IP literals and `localhost` (against DNS rebinding): the
       * names computers and browsers use to reach this server. `"*"` accepts any (only behind a checking proxy).
       */
      allowedHosts: z.array(z.string().min(1).toLowerCase()).default([]),
      /** Browser origins (`https://dash.example:8443`) allowed to call the API and open WebSockets besides the server's own. */
      allowedOrigins: z.array(z.string().regex(/^https?:\/\/[^/]+$/, 'scheme://host[:port]')).default([]),
      /** Refuse computers without their own key (the shared token and an open server then only serve operators). */
      requireClientKeys: z.boolean().default(false),
      /** Life of an enrollment code (ms). */
      enrollmentTtlMs: positiveInt.default(15 * 60_000),
      /** How long a rotated key keeps working beside its successor (ms). */
      rotationOverlapMs: positiveInt.default(24 * 3600_000),
      /** Failed authentications allowed per source address and minute before guessable secrets are not checked. */
      authFailuresPerMinute: positiveInt.default(10),
      /**
       * Computers may ask to pair without a code (`install.lua --pair`); each request waits for an operator's
       * `ccagent clients approve` (or deny). Off: pairing only with an enrollment code.
       */
      pairingRequests: z.boolean().default(true),
      /** Most pairing requests waiting for a decision at once (further requests get 429). */
      maxPendingPairings: positiveInt.default(20),
      /**
       * Trust on first use: approve every pairing request at once, for an id that has no key yet. Only for a server
       * nobody else can reach; off by default.
       */
      trustOnFirstUse: z.boolean().default(false),
    })
    .default({
      allowedHosts: [],
      allowedOrigins: [],
      requireClientKeys: false,
      enrollmentTtlMs: 15 * 60_000,
      rotationOverlapMs: 24 * 3600_000,
      authFailuresPerMinute: 10,
      pairingRequests: true,
      maxPendingPairings: 20,
      trustOnFirstUse: false,
    }),
  /** Most simultaneous WebSocket connections; further upgrades get HTTP 503. */
  maxConnections: positiveInt.default(20_000),
  /** Concurrent chat calls per model name (the engine queues the rest fairly). */
  modelConcurrency: positiveInt.default(1),
  /**
   * The computers' screen mirror (docs/dashboard.md, "The computer's screen"): the server's word per computer
   * (`computers`, else `default`; an operator's switch over HTTP wins over both; absent: the computer decides) and
   * the most dashboard viewers of one computer's screen and of all screens at once (more get 429).
   */
  screen: z
    .strictObject({
      default: z.boolean().optional(),
      computers: z
        .record(z.string().regex(/^[A-Za-z0-9._:@+-]{1,200}$/, 'a client id'), z.boolean())
        .default({}),
      maxViewersPerComputer: positiveInt.default(8),
      maxViewers: positiveInt.default(64),
    })
    .default({ computers: {}, maxViewersPerComputer: 8, maxViewers: 64 }),
});

/**
 * Operator maximums for what a request may set per task (`settings` of `create_task` / `POST /api/tasks`). A request
 * above one is refused with a structured error naming the field; the kind's own budgets are not bounded by them.
 */
const limitsSchema = z.strictObject({
  /** Most decisions one run of a task may be given. */
  maxSteps: positiveInt.default(100_000),
  /** Most command calls one run of a task may be given. */
  maxToolCalls: positiveInt.default(1_000_000),
  /** Native: most model calls one run may be given. */
  maxModelCalls: positiveInt.default(100_000),
  /** Most prompt tokens one run may be given (summed from the model server's counts). */
  maxPromptTokens: positiveInt.default(1_000_000_000),
  /** Most output tokens one run may be given (summed from the model server's counts). */
  maxOutputTokens: positiveInt.default(100_000_000),
  /** Longest wall-clock budget of one run (ms); default 30 days. */
  maxDeadlineMs: positiveInt.default(30 * 24 * 3_600_000),
  /** Largest context window a request may ask for (tokens). */
  maxNumCtx: positiveInt.default(131_072),
  /** Highest temperature a request may ask for. */
  maxTemperature: z.number().min(0).max(2).default(2),
  /** Model names a request may choose; default: only the models configured for the roles. */
  models: z.array(z.string().min(1)).optional(),
});

/** The whole configuration schema (after defaults are merged in). */
export const configSchema = z
  .strictObject({
    models: z.strictObject({ planner: modelSchema, executor: modelSchema, native: modelSchema }),
    taskKinds: z.record(kindName, taskKindSchema),
    /** Other names a `create_task` may use for a kind (the Lua client's default kind is `general`). */
    kindAliases: z.record(kindName, kindName).default({}),
    server: serverSchema.default(serverSchema.parse({})),
    limits: limitsSchema.default(limitsSchema.parse({})),
    serverTools: serverToolsSchema.default(serverToolsSchema.parse({})),
  })
  .superRefine((cfg, ctx) => {
    for (const [alias, target] of Object.entries(cfg.kindAliases)) {
      if (!Object.hasOwn(cfg.taskKinds, target)) {
        ctx.addIssue({
          code: 'custom',
          path: ['kindAliases', alias],
          message: `no task kind named "${target}"`,
        });
      }
    }
    for (const role of ['planner', 'executor', 'native'] as const) {
      const m = cfg.models[role];
      if (m.provider === 'openai-compatible' && m.baseUrl === undefined && m.servers === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['models', role, 'baseUrl'],
          message: 'required when provider is "openai-compatible" (or give servers)',
        });
      }
    }
    checkPools(cfg.models, ctx);
    for (const [name, kind] of Object.entries(cfg.taskKinds)) {
      for (const i of kindModelIssues(cfg, kind)) {
        ctx.addIssue({ code: 'custom', path: ['taskKinds', name, ...i.path], message: i.message });
      }
    }
  });

/** The identity of a pool server: provider and URL without a trailing slash. */
function serverId(provider: string, baseUrl: string): string {
  return `${provider} ${baseUrl.replace(/\/+$/, '')}`;
}

/**
 * Rules of `models.<role>.servers` a field schema cannot say: not together with `baseUrl`/`apiKeyEnv`, no server
 * twice in one role, one concurrency per server across roles (it is the server's, however many roles use it), and a
 * backoff bound at least the first backoff.
 */
function checkPools(
  models: Record<'planner' | 'executor' | 'native', ModelConfig>,
  ctx: z.RefinementCtx,
): void {
  const concurrencyOf = new Map<string, { concurrency: number; where: string }>();
  for (const role of ['planner', 'executor', 'native'] as const) {
    const m = models[role];
    if (m.pool.maxProbeBackoffMs < m.pool.probeBackoffMs) {
      ctx.addIssue({
        code: 'custom',
        path: ['models', role, 'pool', 'maxProbeBackoffMs'],
        message: `must be at least probeBackoffMs (${m.pool.probeBackoffMs})`,
      });
    }
    if (m.servers === undefined) continue;
    for (const field of ['baseUrl', 'apiKeyEnv'] as const) {
      if (m[field] !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['models', role, field],
          message: `give either ${field} or servers, not both (each server has its own baseUrl and apiKeyEnv)`,
        });
      }
    }
    const seen = new Map<string, number>();
    m.servers.forEach((s, i) => {
      const id = serverId(s.provider ?? m.provider, s.baseUrl);
      const first = seen.get(id);
      if (first !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['models', role, 'servers', i, 'baseUrl'],
          message: `the same server as servers.${first} (${s.baseUrl})`,
        });
        return;
      }
      seen.set(id, i);
      const where = `models.${role}.servers.${i}`;
      const other = concurrencyOf.get(id);
      if (other !== undefined && other.concurrency !== s.concurrency) {
        ctx.addIssue({
          code: 'custom',
          path: ['models', role, 'servers', i, 'concurrency'],
          message: `${s.concurrency}, but ${other.where} gives the same server concurrency ${other.concurrency}: it is the server's, one value`,
        });
      } else if (other === undefined) {
        concurrencyOf.set(id, { concurrency: s.concurrency, where });
      }
    });
  }
}

/** Validated configuration. */
export type OrchestratorConfig = z.infer<typeof configSchema>;
/** Configuration of one model role. */
export type ModelConfig = z.infer<typeof modelSchema>;
/** One server of a role's pool. */
export type PoolServerConfig = z.infer<typeof poolServerSchema>;
/** Configuration of one task kind. */
export type TaskKindConfig = z.infer<typeof taskKindSchema>;
/** Operator maximums of per-task settings. */
export type LimitsConfig = z.infer<typeof limitsSchema>;
/** Model roles. */
export type ModelRoleName = keyof OrchestratorConfig['models'];

/** The CC:Tweaked core commands a task's model works with (their one home is `@ccagent/protocol`). */
const CC_COMMANDS: string[] = [...CC_TASK_COMMANDS];

/** Built-in defaults as raw JSON (what a config file is merged into). */
export const DEFAULT_CONFIG = {
  models: {
    planner: { name: 'qwen3:8b', options: { temperature: 0.2, numCtx: 16384 } },
    executor: { name: 'qwen3:8b', options: { temperature: 0, numCtx: 8192 } },
    native: { name: 'qwen3:8b', options: { temperature: 0.2, numCtx: 16384 } },
  },
  taskKinds: {
    general_agent: {
      description:
        'Open-ended task on a CC computer: the model calls the client’s commands directly (native tools).',
      strategy: 'native',
      allowedCommands: [],
      budgets: { maxSteps: 40, maxToolCalls: 60, deadlineMs: 3_600_000 },
    },
    code_job: {
      description: 'Write a Lua program on the CC computer, run it and fix it until it works.',
      strategy: 'planner_executor',
      executorMode: 'parser-then-model',
      allowedCommands: CC_COMMANDS,
      budgets: { maxSteps: 60, maxToolCalls: 80, deadlineMs: 3_600_000 },
      completion: { requireSuccessfulRun: true, requireLastRunOk: true },
      systemPrompt:
        'You write Lua 5.2 programs for CC:Tweaked. Test every program by running it before finishing.',
    },
    resident_agent: {
      description:
        'An agent that lives for days: it waits (no model call) until an event, a message or its own timer wakes it; budgets per hour and day.',
      strategy: 'native',
      allowedCommands: [],
      waitTool: true,
      maxIterations: 1_000_000,
      budgets: {},
      periodBudgets: {
        hour: { maxSteps: 30, maxToolCalls: 60, maxTokens: 400_000 },
        day: { maxSteps: 300, maxToolCalls: 600, maxTokens: 4_000_000 },
      },
    },
    chat: {
      description: 'Talk with the model directly: no tools, the reply streams as it is written.',
      strategy: 'chat',
      budgets: { maxSteps: 20, deadlineMs: 600_000 },
    },
  },
  kindAliases: { general: 'general_agent', agent: 'general_agent' },
  server: {},
} as const;

/** Plain-object check for deep merging. */
function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Deep-merge `over` into `base`: objects merge key by key, everything else (arrays included) replaces. */
export function deepMerge(base: unknown, over: unknown): unknown {
  if (!isPlainObject(base) || !isPlainObject(over)) return over === undefined ? base : over;
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = deepMerge(base[k], v);
  return out;
}

/** Formats zod issues as `path.to.field: message` lines (message without zod's "Invalid input: " prefix). */
export function formatIssues(error: z.ZodError): string[] {
  return error.issues.map((i) => {
    const p = i.path.map(String).join('.') || '(root)';
    // A bad record key ("Invalid key in record") carries the key schema's own message, which says what is wrong.
    const inner = i.code === 'invalid_key' ? i.issues[0]?.message : undefined;
    const msg = (inner ?? i.message).replace(/^Invalid input: /, '');
    return `${p}: ${msg}`;
  });
}

/** Where configuration values come from, for {@link loadConfig}. */
export interface ConfigSources {
  /** Path of a JSON config file (`--config` / `CCAGENT_CONFIG`). */
  file?: string;
  /** Environment (model name overrides `CCAGENT_PLANNER_MODEL`, `CCAGENT_EXECUTOR_MODEL`, `CCAGENT_NATIVE_MODEL`). */
  env?: NodeJS.ProcessEnv;
  /** Values merged over the file (and under env), e.g. from an embedding program. Validated like the file. */
  overrides?: Record<string, unknown>;
}

/**
 * Builds the configuration: defaults ← file ← env, validated. Returns every problem at once with its path.
 * Relative `systemPromptFile`s are read relative to the config file and folded into `systemPrompt`.
 */
export function loadConfig(
  sources: ConfigSources = {},
): { ok: true; value: OrchestratorConfig } | { ok: false; error: OrchestratorError } {
  let raw: unknown = DEFAULT_CONFIG;
  if (sources.file !== undefined) {
    let text: string;
    try {
      text = readFileSync(sources.file, 'utf8');
    } catch (cause) {
      return {
        ok: false,
        error: new OrchestratorError('config_invalid', `cannot read config file ${sources.file}`, { cause }),
      };
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (cause) {
      return {
        ok: false,
        error: new OrchestratorError(
          'config_invalid',
          `config file ${sources.file} is not valid JSON: ${(cause as Error).message}`,
          { cause },
        ),
      };
    }
    if (!isPlainObject(parsed)) {
      return {
        ok: false,
        error: new OrchestratorError(
          'config_invalid',
          `config file ${sources.file}: (root): expected object`,
        ),
      };
    }
    raw = deepMerge(raw, parsed);
  }
  if (sources.overrides !== undefined) raw = deepMerge(raw, sources.overrides);
  const env = sources.env ?? {};
  const envModels: Record<string, unknown> = {};
  for (const role of ['planner', 'executor', 'native'] as const) {
    const name = env[`CCAGENT_${role.toUpperCase()}_MODEL`];
    if (name) envModels[role] = { name };
  }
  if (Object.keys(envModels).length > 0) raw = deepMerge(raw, { models: envModels });

  const result = configSchema.safeParse(raw);
  if (!result.success) {
    const where = sources.file !== undefined ? `config file ${sources.file}` : 'configuration';
    const lines = formatIssues(result.error);
    return {
      ok: false,
      error: new OrchestratorError('config_invalid', `${where} is invalid:\n  ${lines.join('\n  ')}`, {
        details: { issues: lines },
      }),
    };
  }
  const config = result.data;
  // Tool modules, like prompt files, are named relative to the config file.
  config.serverTools.modules = config.serverTools.modules.map((m) =>
    path.resolve(sources.file ? path.dirname(sources.file) : process.cwd(), m),
  );
  for (const [kind, spec] of Object.entries(config.taskKinds)) {
    if (spec.systemPromptFile === undefined) continue;
    const file = path.resolve(
      sources.file ? path.dirname(sources.file) : process.cwd(),
      spec.systemPromptFile,
    );
    try {
      spec.systemPrompt = readFileSync(file, 'utf8');
    } catch (cause) {
      return {
        ok: false,
        error: new OrchestratorError(
          'config_invalid',
          `taskKinds.${kind}.systemPromptFile: cannot read ${file}`,
          { cause },
        ),
      };
    }
  }
  return { ok: true, value: config };
}

/** Distinct model names the configuration uses, with the roles that use each. */
export function configuredModels(config: OrchestratorConfig): Map<string, ModelRoleName[]> {
  const out = new Map<string, ModelRoleName[]>();
  for (const role of ['planner', 'executor', 'native'] as const) {
    const name = config.models[role].name;
    out.set(name, [...(out.get(name) ?? []), role]);
  }
  return out;
}

/** Model roles a task kind needs (planner+executor for planner_executor; native for native and chat). */
export function rolesFor(kind: TaskKindConfig): ModelRoleName[] {
  return kind.strategy === 'planner_executor' ? ['planner', 'executor'] : ['native'];
}

/** The canonical task kind for a requested name (itself or an alias), or undefined when unknown (the engine's rule). */
export function resolveKind(config: OrchestratorConfig, requested: string): string | undefined {
  return resolveTaskKind({ kinds: config.taskKinds, aliases: config.kindAliases }, requested);
}
