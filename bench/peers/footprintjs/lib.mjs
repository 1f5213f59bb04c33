// Shared loader + timing harness for the footprintjs peer scripts.
// bench/run.sh installs footprintjs into bench/.cache/fp (git-ignored); FP_DIR overrides the place.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const FP_DIR = process.env.FP_DIR ?? fileURLToPath(new URL('../../.cache/fp', import.meta.url));
export const fp = createRequire(`${FP_DIR}/package.json`)('footprintjs');
const VERSION = JSON.parse(readFileSync(`${FP_DIR}/node_modules/footprintjs/package.json`, 'utf8')).version;

// BENCH_QUICK=1 → smoke-test budgets; BENCH_BUDGET_S overrides the per-measurement time budget.
const QUICK = process.env.BENCH_QUICK === '1';
const BUDGET_MS = 1000 * Number(process.env.BENCH_BUDGET_S ?? (QUICK ? 0.3 : 4));

/** Warm up, then time `fn` repeatedly until both minReps and the time budget are met. Returns ms per call. */
export async function bench(fn, { warmup = 5, minReps = 15, maxReps = 2000 } = {}) {
  for (let i = 0; i < (QUICK ? 1 : warmup); i++) await fn();
  const samples = [];
  const t0 = performance.now();
  while (samples.length < maxReps && (samples.length < (QUICK ? 3 : minReps) || performance.now() - t0 < BUDGET_MS)) {
    const s = performance.now();
    await fn();
    samples.push(performance.now() - s);
  }
  return samples;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** Print one JSON result line. Samples are ms per run; `per` converts them to µs per unit (stage, iteration, run). */
export function emit(workload, variant, samplesMs, { per = 1, unit = 'us/run', ...extra } = {}) {
  const us = samplesMs.map((x) => (x * 1000) / per);
  console.log(JSON.stringify({
    peer: 'footprintjs', version: VERSION, runtime: `node ${process.version}`, workload, variant, unit, per,
    n: us.length, median: median(us), min: Math.min(...us), max: Math.max(...us),
    run_median_ms: median(samplesMs), ...extra,
  }));
}

export const peakRssBytes = () => process.resourceUsage().maxRSS * 1024;
export const jsonBytes = (v) => Buffer.byteLength(JSON.stringify(v), 'utf8');
