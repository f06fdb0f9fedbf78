// Boots a CC computer running test/e2e/driver.lua (the real library + agent host) against a Stack, and reads
// what the driver recorded.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startComputer, type Computer, type StartOptions } from '../craftos/craftos.js';
import { craftos } from './stack.js';

const DRIVER = readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), 'driver.lua'), 'utf8');

/** One task of a plan, created through the client API (or, with `task_id`, followed with `subscribe`). */
export interface PlanTask {
  prompt?: string;
  task_id?: string;
  kind?: string;
  context?: unknown;
  /** Answer every question of this task with this text (through `answer()`). */
  answer?: string;
  /** Answer only once this file exists on the computer. */
  answer_after_file?: string;
  /** Create the task only once this file exists on the computer (the test writes it). */
  after_file?: string;
  /** Run it on this computer (another of this one's group) instead of this one. */
  target?: string;
  /** Per-task settings (`create_task.settings`). */
  settings?: Record<string, unknown>;
}

/** What the driver does (see driver.lua). */
export interface Plan {
  url: string;
  client_id: string;
  reconnect_min?: number;
  reconnect_max?: number;
  /** Seconds the driver waits for one task before giving up on it. */
  task_timeout?: number;
  tasks: PlanTask[];
  after?: Array<{ delete: string } | { run: string[] }>;
  /** Keep serving tools after the tasks until this file exists on the computer (the test writes it). */
  stay_until_file?: string;
}

/** One task as the driver saw it. */
export interface TaskSeen {
  id?: string;
  prompt?: string;
  status?: string;
  /** Distinct consecutive statuses from `ccagent_task` events. */
  statuses: string[];
  questions: Array<{ question_id: string; question: string; why?: string }>;
  result?: Record<string, unknown>;
  error?: Record<string, unknown>;
  refused?: { code: string; message: string };
  timed_out?: boolean;
}

/** The driver's /e2e-out.json. */
export interface DriverOut {
  tasks: TaskSeen[];
  after: Array<{ delete?: string; run?: string[]; ran?: boolean; ok?: boolean; output?: string }>;
  connections: string[];
  errors: Array<{ code: string; message: string }>;
  problems: unknown[];
  tools?: Array<Record<string, unknown>>;
}

/** Boot a computer running the driver with `plan` (the library is mounted read-only at /ccagent). */
export function bootDriver(plan: Plan, opts: StartOptions = {}): Computer {
  if (!craftos) throw new Error('CraftOS-PC not available');
  return startComputer(craftos, DRIVER, {
    timeoutMs: 90_000,
    ...opts,
    files: { ...opts.files, 'e2e-plan.json': JSON.stringify(plan) },
  });
}

/** Wait for the driver to finish and return what it recorded (throws with the screen when it did not). */
export async function driverResult(c: Computer): Promise<DriverOut> {
  const exit = await c.exited;
  const file = path.join(c.disk, 'e2e-out.json');
  if (exit.code !== 0 || !existsSync(file)) {
    throw new Error(`the driver did not finish cleanly (exit ${exit.code}); screen:\n${exit.stdout}`);
  }
  return JSON.parse(readFileSync(file, 'utf8')) as DriverOut;
}
