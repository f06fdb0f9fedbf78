/**
 * The processes an eval starts (the orchestrator, CraftOS-PC computers) run in their own process groups, so a Ctrl-C
 * at the terminal reaches only the eval, which then stops them in order (cancel the tasks, stop the computers, stop
 * the orchestrator). Whatever is still running when the eval's process exits — a second Ctrl-C, an uncaught error —
 * is killed on the way out.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';

const live = new Set<ChildProcess>();
let hooked = false;

function killAll(): void {
  for (const c of live) {
    if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  }
}

/** `spawn` in a process group of its own, killed when this process exits. */
export function spawnOwned(command: string, args: readonly string[], options: SpawnOptions): ChildProcess {
  const child = spawn(command, args, { ...options, detached: true });
  live.add(child);
  child.once('exit', () => live.delete(child));
  if (!hooked) {
    hooked = true;
    process.once('exit', killAll);
  }
  return child;
}
