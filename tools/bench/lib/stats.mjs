// Percentiles and table printing for the benchmarks.

/** Percentile (0..100) of numbers, by nearest rank; NaN for an empty list. */
export function percentile(values, p) {
  if (values.length === 0) return NaN;
  const sorted = Float64Array.from(values).sort();
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

/** p50/p99/mean/count of a list of durations (ms). */
export function summarize(values) {
  const n = values.length;
  const mean = n === 0 ? NaN : values.reduce((a, b) => a + b, 0) / n;
  return { n, p50: percentile(values, 50), p99: percentile(values, 99), mean };
}

/** Format a number with `d` decimals (or `-` when not a finite number). */
export function fmt(x, d = 2) {
  return Number.isFinite(x) ? x.toFixed(d) : '-';
}

/** Print rows (arrays of strings) as an aligned table with a header. */
export function printTable(header, rows) {
  const widths = header.map((h, i) =>
    Math.max(String(h).length, ...rows.map((r) => String(r[i] ?? '').length)),
  );
  const line = (r) => r.map((c, i) => String(c ?? '').padEnd(widths[i])).join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) console.log(line(r));
}

/** Resolve after `ms`. */
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
