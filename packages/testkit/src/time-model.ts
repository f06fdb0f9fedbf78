/**
 * How long a real GPU takes for what the fake model server counts: prompt tokens evaluated (not served from the
 * cache), tokens generated, a model load. Figures are published measurements; see {@link REFERENCE_GPU}.
 */

/** Speeds of one GPU and model size. Rates are tokens per second at the given context depth (tokens). */
export interface TimeModel {
  /** What the figures describe, printed by benches. */
  readonly name: string;
  /** Prompt processing (prefill) rate by context depth: [depth, tokens/s], ascending depth. */
  readonly promptRates: readonly (readonly [number, number])[];
  /** Generation rate by context depth: [depth, tokens/s], ascending depth. */
  readonly generationRates: readonly (readonly [number, number])[];
  /** Fixed cost of one model call beyond its tokens (seconds): request set-up, the first forward pass. */
  readonly requestOverheadS: number;
  /** Loading the model into VRAM (seconds), paid when it was not loaded or had to be reloaded. */
  readonly loadS: number;
  /** Where the figures come from. */
  readonly sources: readonly string[];
}

/**
 * Reference: a 7–8B model at Q4_K_M on a 12 GB consumer card.
 *
 * - Prompt and generation rates: llama.cpp `llama-bench`, Llama 3 8B Q4_K_M on an RTX 4070 Ti 12 GB (CUDA 12.1,
 *   May 2024): pp512 3,936, pp1024 3,653, pp4096 2,730, pp8192 2,020 tokens/s; tg512 83.5, tg1024 82.2, tg4096 78.6,
 *   tg8192 73.5 tokens/s — XiongjieDai/GPU-Benchmarks-on-LLM-Inference, README, "LLaMA 3" NVIDIA table.
 * - Per-call overhead and load: Ollama's own reports for qwen2.5:7b Q4_K_M on an RTX 3060 12 GB (a published
 *   setup note, 2026): a cold `/api/chat` reported `load_duration` 6.6 s; a warm one with 13 prompt tokens to
 *   evaluate (24 of 37 cached) reported `prompt_eval_duration` 89 ms, so a call costs ~0.08 s before its tokens.
 *   These come from a slower card than the rates, so they make small calls look no cheaper than they are.
 */
export const REFERENCE_GPU: TimeModel = {
  name: '7-8B Q4_K_M on a 12 GB consumer GPU (RTX 4070 Ti rates, llama.cpp)',
  promptRates: [
    [512, 3936],
    [1024, 3653],
    [4096, 2730],
    [8192, 2020],
  ],
  generationRates: [
    [512, 83.5],
    [1024, 82.2],
    [4096, 78.6],
    [8192, 73.5],
  ],
  requestOverheadS: 0.08,
  loadS: 6.6,
  sources: [
    'XiongjieDai/GPU-Benchmarks-on-LLM-Inference README (llama-bench, Llama 3 8B Q4_K_M, RTX 4070 Ti 12 GB)',
    'Ollama /api/chat reports for qwen2.5:7b Q4_K_M on an RTX 3060 12 GB (load_duration, prompt_eval_duration)',
  ],
};

/** Rate at a context depth: linear between the measured depths, the nearest measurement outside them. */
export function rateAt(points: readonly (readonly [number, number])[], depth: number): number {
  const first = points[0];
  const last = points[points.length - 1];
  if (!first || !last) throw new RangeError('rateAt: no measurements');
  if (depth <= first[0]) return first[1];
  if (depth >= last[0]) return last[1];
  for (let i = 1; i < points.length; i += 1) {
    const [d1, r1] = points[i - 1] as readonly [number, number];
    const [d2, r2] = points[i] as readonly [number, number];
    if (depth <= d2) return r1 + ((r2 - r1) * (depth - d1)) / (d2 - d1);
  }
  return last[1];
}

/** Seconds of one model call, split the way Ollama reports durations. */
export interface CallSeconds {
  load: number;
  /** The evaluated prompt tokens only (Ollama's `prompt_eval_duration`: a prompt all in cache costs ~one token). */
  promptEval: number;
  generation: number;
  /** Everything, the per-call overhead included (Ollama's `total_duration`). */
  total: number;
}

/**
 * Seconds one call takes: `evaluated` prompt tokens processed at the rate for a context of `promptTokens`, `output`
 * tokens generated at the rate for the context they extend, the per-call overhead, and the load if `loaded`.
 */
export function callSeconds(
  model: TimeModel,
  call: { promptTokens: number; evaluated: number; output: number; loaded: boolean },
): CallSeconds {
  const load = call.loaded ? model.loadS : 0;
  // The per-call overhead is in total_duration only: the real server's prompt_eval_duration of a fully cached prompt
  // is that of the one token it evaluates (16 ms where the cold prompt took 19 s; the model-server contract).
  const promptEval = call.evaluated / rateAt(model.promptRates, call.promptTokens);
  const generation = call.output / rateAt(model.generationRates, call.promptTokens + call.output / 2);
  return { load, promptEval, generation, total: load + model.requestOverheadS + promptEval + generation };
}
