/**
 * The orchestrator's server-side tools (seed 004): the engine's built-ins when `serverTools.builtIns`, then the tools
 * each module named in `serverTools.modules` exports, registered in one `ServerToolRegistry`. A module is JavaScript
 * (`.js`, `.mjs`, `.cjs`) or TypeScript (`.ts`, `.mts`, `.cts`, loaded through tsx) and exports its tools as `default`
 * (one tool or a list) and/or `tools` (a list). Any problem — a module that cannot be loaded, exports no tool, a bad
 * definition, a name taken twice — stops the startup with `config_invalid` naming the module.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  builtInServerTools,
  ServerToolRegistry,
  type Clock,
  type Logger,
  type ServerTool,
} from '@ccagent/engine';
import type { OrchestratorConfig } from './config.js';
import { OrchestratorError } from './orchestrator-error.js';

const TS = new Set(['.ts', '.mts', '.cts']);

/** Build the registry of the configured server tools (see the module comment). */
export async function loadServerTools(
  config: OrchestratorConfig,
  opts: { clock: Clock; logger: Logger },
): Promise<ServerToolRegistry> {
  const st = config.serverTools;
  const registry = new ServerToolRegistry({
    clock: opts.clock,
    logger: opts.logger,
    defaultTimeoutSeconds: st.timeoutSeconds,
  });
  if (st.builtIns) for (const t of builtInServerTools({ clock: opts.clock })) registry.register(t);
  for (const [i, file] of st.modules.entries()) {
    const where = `serverTools.modules[${i}] (${file})`;
    let mod: Record<string, unknown>;
    try {
      mod = await importModule(file);
    } catch (cause) {
      throw new OrchestratorError(
        'config_invalid',
        `${where}: cannot load it: ${cause instanceof Error ? cause.message : String(cause)}`,
        { cause },
      );
    }
    const tools = exportedTools(mod);
    if (tools.length === 0) {
      throw new OrchestratorError(
        'config_invalid',
        `${where}: exports no tool (export default a tool or a list of tools, or export const tools = [...])`,
      );
    }
    for (const tool of tools) {
      try {
        registry.register(tool);
      } catch (cause) {
        throw new OrchestratorError(
          'config_invalid',
          `${where}: ${cause instanceof Error ? cause.message : String(cause)}`,
          { cause },
        );
      }
    }
    opts.logger.info(
      { module: file, tools: tools.map((t) => (t as { name?: unknown }).name) },
      'server tools loaded',
    );
  }
  return registry;
}

async function importModule(file: string): Promise<Record<string, unknown>> {
  const url = pathToFileURL(file).href;
  if (TS.has(path.extname(file))) {
    const { tsImport } = await import('tsx/esm/api');
    return (await tsImport(url, import.meta.url)) as Record<string, unknown>;
  }
  return (await import(url)) as Record<string, unknown>;
}

/** The tools a module exports: `default` (a tool or a list; a CommonJS module's `module.exports` too) and `tools`. */
function exportedTools(mod: Record<string, unknown>): ServerTool[] {
  const out: unknown[] = [];
  const add = (v: unknown): void => {
    if (Array.isArray(v)) out.push(...(v as unknown[]));
    else if (v !== undefined && v !== null) out.push(v);
  };
  let def = mod.default;
  // A CommonJS module (or tsx's interop) may wrap the exports once more.
  if (def && typeof def === 'object' && !Array.isArray(def) && !('name' in def)) {
    const inner = def as Record<string, unknown>;
    if (mod.tools === undefined) add(inner.tools);
    def = inner.default;
  }
  add(def);
  add(mod.tools);
  return [...new Set(out)] as ServerTool[];
}
