/**
 * Model name normalisation, so that configured names match what a server lists (`qwen2.5` is `qwen2.5:latest`).
 */

const DEFAULT_REGISTRY = 'registry.ollama.ai/';
const DEFAULT_NAMESPACE = 'library/';

/**
 * Ollama's canonical short form of a model name: lower case, the default registry and `library/` namespace
 * dropped, and `:latest` added when no tag is given. `Qwen2.5`, `qwen2.5:latest` and
 * `registry.ollama.ai/library/qwen2.5:latest` all become `qwen2.5:latest`; `hf.co/org/repo:Q4_K_M` keeps its host.
 */
export function normalizeModelName(name: string): string {
  let n = name.trim().toLowerCase();
  if (n.startsWith(DEFAULT_REGISTRY)) n = n.slice(DEFAULT_REGISTRY.length);
  if (n.startsWith(DEFAULT_NAMESPACE)) n = n.slice(DEFAULT_NAMESPACE.length);
  const lastSegment = n.slice(n.lastIndexOf('/') + 1);
  return lastSegment.includes(':') ? n : `${n}:latest`;
}

/** Whether two model names denote the same model once normalised. */
export function sameModel(a: string, b: string): boolean {
  return normalizeModelName(a) === normalizeModelName(b);
}
