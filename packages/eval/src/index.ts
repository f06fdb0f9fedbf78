/**
 * `@ccagent/eval`: which model can do which ComputerCraft job, measured. The versioned suite of jobs (`suite/`), the
 * runner that gives them to a model through a real orchestrator on real CraftOS-PC computers and asks each job's
 * checker for the verdict, and the tables of a run.
 */
export { EvalError, isEvalError, type EvalErrorCode } from './eval-error.js';
export {
  LOOPS,
  SUITE_DIR,
  loadJob,
  loadSuite,
  selectJobs,
  type CheckContext,
  type Checker,
  type Job,
  type JobSpec,
  type Loop,
  type ProgramRun,
  type RunOutcome,
  type ScriptedReply,
  type ScriptedRun,
  type Suite,
  type Verdict,
} from './job.js';
export {
  createComputer,
  findCraftos,
  runPrograms,
  startHost,
  type ComputerDisk,
  type Craftos,
  type RunningHost,
} from './craftos.js';
export {
  DEFAULT_EVAL_NUM_PREDICT,
  checkModelServer,
  evalConfig,
  kindName,
  openaiBase,
  type ModelServer,
} from './orchestrator.js';
export {
  failureReason,
  metricsOf,
  type AttemptMetrics,
  type FailureReason,
  type TaskDetail,
} from './metrics.js';
export {
  checkContext,
  runChecker,
  runEval,
  type AttemptResult,
  type EvalModel,
  type EvalOptions,
  type EvalRun,
  type ProgressEvent,
} from './run-eval.js';
export { renderMarkdown, renderText, reportRows, runTitle, type ReportRow } from './report.js';
