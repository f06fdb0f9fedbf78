/**
 * `@ccagent/cli`: the `ccagent` command (inspect and control ccagent tasks from the SQLite file or a running
 * orchestrator), usable as a library: run it with injected output, or use its two task sources directly.
 */
export {
  buildProgram,
  runCli,
  CLI_VERSION,
  DEFAULT_URL,
  FOLLOW_PAGE,
  type ProgramDeps,
  type DbOpener,
  type UrlOpener,
} from './program.js';
export { CliError, EXIT_CODES, type CliErrorCode } from './errors.js';
export { HttpTaskSource, type HttpSourceOptions } from './http-source.js';
export { openDbSource, DbTaskSource } from './db-source.js';
export { wantsColor, type Output } from './output.js';
export type {
  TaskSource,
  TaskActions,
  TaskView,
  TaskDetail,
  TaskUpdates,
  TaskPageView,
  TaskListQuery,
  StepView,
  UsageView,
  ErrorView,
  QuestionView,
  ClientView,
  ToolView,
  CreateTaskInput,
} from './source.js';
