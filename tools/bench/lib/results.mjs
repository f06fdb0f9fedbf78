// Where the benchmarks write their results, and the machine they ran on.
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** tools/bench/results, where every benchmark writes `<name>.json` (run-all reads them from there). */
export const RESULTS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'results');

/** The machine a run measured: CPUs, memory, Node version and platform. */
export function machineInfo() {
  return {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    memGiB: +(os.totalmem() / 2 ** 30).toFixed(1),
    node: process.version,
    platform: `${process.platform} ${os.release()}`,
  };
}

/** Write `results` to tools/bench/results/<name>.json and say so on stdout. */
export function writeResults(name, results) {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = path.join(RESULTS_DIR, `${name}.json`);
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`\nwrote ${path.relative(process.cwd(), file)}`);
}
