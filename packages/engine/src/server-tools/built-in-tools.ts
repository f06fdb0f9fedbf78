/**
 * The server-side tools seed 004 ships: `echo(message)`, `get_time(format)` and `get_system_info(detailed)`, the
 * last about the host this process runs on (CPU, RAM, GPU where it can be found, and a hardware tier).
 */
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { systemClock } from '../clock.js';
import type { Clock } from '../ports.js';
import type { JsonValue } from '../types.js';
import { defineServerTool, type ServerTool } from './server-tool.js';

/** Options of {@link builtInServerTools}. */
export interface BuiltInToolOptions {
  /** Time source of `get_time` (a manual clock in tests). */
  clock?: Clock;
}

/** A GPU found on the host. */
export interface GpuInfo {
  vendor: string;
  name?: string;
  /** Video memory in MiB, when the driver reports it. */
  memoryMiB?: number;
}

/** How capable the host is for running local models, from its RAM, cores and GPU memory. */
export type HardwareTier = 'low' | 'medium' | 'high';

/**
 * The tier of a host: `high` with at least 32 GiB of RAM and 8 cores or a GPU with at least 8 GiB, `medium` with at
 * least 16 GiB and 4 cores, `low` otherwise.
 */
export function hardwareTier(ramGiB: number, cores: number, gpus: readonly GpuInfo[]): HardwareTier {
  const vram = Math.max(0, ...gpus.map((g) => g.memoryMiB ?? 0)) / 1024;
  if ((ramGiB >= 32 && cores >= 8) || vram >= 8) return 'high';
  if (ramGiB >= 16 && cores >= 4) return 'medium';
  return 'low';
}

const PCI_VENDORS: Record<string, string> = { '0x10de': 'NVIDIA', '0x1002': 'AMD', '0x8086': 'Intel' };

/** GPUs listed by Linux's DRM subsystem (vendor only); none elsewhere. */
function drmGpus(): GpuInfo[] {
  if (process.platform !== 'linux') return [];
  const out: GpuInfo[] = [];
  let cards: string[];
  try {
    cards = readdirSync('/sys/class/drm').filter((n) => /^card\d+$/.test(n));
  } catch {
    return [];
  }
  for (const card of cards) {
    try {
      const vendor = readFileSync(`/sys/class/drm/${card}/device/vendor`, 'utf8').trim();
      out.push({ vendor: PCI_VENDORS[vendor] ?? vendor });
    } catch {
      // a card without a PCI device (a virtual display): not a GPU to report
    }
  }
  return out;
}

/** NVIDIA GPUs with name and memory from `nvidia-smi`, when it is installed (at most 2 s); none otherwise. */
function nvidiaGpus(signal: AbortSignal): Promise<GpuInfo[]> {
  return new Promise((resolve) => {
    execFile(
      'nvidia-smi',
      ['--query-gpu=name,memory.total', '--format=csv,noheader,nounits'],
      { timeout: 2000, signal },
      (err, stdout) => {
        if (err) return resolve([]);
        resolve(
          stdout
            .split('\n')
            .map((l) => l.split(',').map((x) => x.trim()))
            .filter((p) => p[0])
            .map(([name, mem]) => ({
              vendor: 'NVIDIA',
              name: name as string,
              ...(Number.isFinite(Number(mem)) ? { memoryMiB: Number(mem) } : {}),
            })),
        );
      },
    );
  });
}

/** The three built-in tools (new objects each call: register them in one registry). */
export function builtInServerTools(opts: BuiltInToolOptions = {}): ServerTool[] {
  const clock = opts.clock ?? systemClock;
  const echo = defineServerTool<{ message: string }>({
    name: 'echo',
    description: 'Return the given message unchanged (a check that server-side tools work).',
    parameters: {
      type: 'object',
      properties: { message: { type: 'string', description: 'the text to send back' } },
      required: ['message'],
      additionalProperties: false,
    },
    timeoutSeconds: 5,
    execute: ({ message }) => ({ message }),
  });
  const getTime = defineServerTool<{ format: 'iso' | 'readable' | 'timestamp' }>({
    name: 'get_time',
    description:
      "The current date and time on the server: format iso (2026-01-31T12:00:00.000Z), readable (a sentence in the server's time zone) or timestamp (Unix seconds).",
    parameters: {
      type: 'object',
      properties: {
        format: { type: 'string', enum: ['iso', 'readable', 'timestamp'], default: 'iso' },
      },
      additionalProperties: false,
    },
    timeoutSeconds: 5,
    execute: ({ format }) => {
      const now = clock.now();
      const d = new Date(now);
      const time: JsonValue =
        format === 'timestamp'
          ? Math.floor(now / 1000)
          : format === 'readable'
            ? d.toLocaleString('en-US', { dateStyle: 'full', timeStyle: 'long' })
            : d.toISOString();
      return { format, time };
    },
  });
  const systemInfo = defineServerTool<{ detailed: boolean }>({
    name: 'get_system_info',
    description:
      'About the server the agent runs on (not a ComputerCraft computer): CPU, RAM, GPU where it can be found, and a hardware tier (low, medium, high). detailed adds per-core speeds, load, uptime and GPU names.',
    parameters: {
      type: 'object',
      properties: { detailed: { type: 'boolean', default: false } },
      additionalProperties: false,
    },
    timeoutSeconds: 10,
    execute: async ({ detailed }, ctx) => {
      const cpus = os.cpus();
      const ramGiB = os.totalmem() / 1024 ** 3;
      const nvidia = detailed ? await nvidiaGpus(ctx.signal) : [];
      const gpus = nvidia.length > 0 ? nvidia : drmGpus();
      const info: Record<string, JsonValue> = {
        platform: `${os.platform()} ${os.release()}`,
        arch: os.arch(),
        cpu: { model: cpus[0]?.model.trim() ?? 'unknown', cores: cpus.length },
        ram: {
          total_gib: round(ramGiB),
          free_gib: round(os.freemem() / 1024 ** 3),
        },
        gpus: gpus.map((g) => ({
          vendor: g.vendor,
          ...(g.name !== undefined ? { name: g.name } : {}),
          ...(g.memoryMiB !== undefined ? { memory_mib: g.memoryMiB } : {}),
        })),
        tier: hardwareTier(ramGiB, cpus.length, gpus),
      };
      if (detailed) {
        info.cpu_speeds_mhz = cpus.map((c) => c.speed);
        info.load_average = os.loadavg().map(round);
        info.uptime_s = Math.round(os.uptime());
        info.hostname = os.hostname();
        info.node = process.version;
      }
      return info;
    },
  });
  return [echo, getTime, systemInfo];
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}
