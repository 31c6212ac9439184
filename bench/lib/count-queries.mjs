// Preloaded into a payhooks process by the cost section (`node --import ./bench/lib/count-queries.mjs …`): counts the
// statements the process sends to PostgreSQL, by kind (its first words), and keeps the first text and parameters of
// each kind for EXPLAIN. Every statement the pg driver sends is one round trip (parse, bind and execute go out
// together). Written to BENCH_QUERY_LOG every 200 ms and at exit; measurement only, never part of payhooks.
import { writeFileSync } from 'node:fs';
import pg from 'pg';

const path = process.env.BENCH_QUERY_LOG;
const counts = {};
/** Milliseconds from sending each statement until its answer, summed by kind. */
const millis = {};
const samples = {};

/** A statement's kind: its text without the schema name or the mark of a prepared one, whitespace folded, cut short. */
function kindOf(text) {
  return text
    .replace('/* payhooks:prepared */', '') // PREPARED_MARKER of src/store/prepared-statements.ts
    .replace(/"bench_[a-z0-9_]+"\./g, '')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 90);
}

const query = pg.Client.prototype.query;
pg.Client.prototype.query = function countedQuery(config, values, callback) {
  const text = typeof config === 'string' ? config : config?.text;
  const result = query.call(this, config, values, callback);
  if (typeof text === 'string') {
    const kind = kindOf(text);
    counts[kind] = (counts[kind] ?? 0) + 1;
    if (!(kind in samples)) {
      samples[kind] = { text, values: Array.isArray(values) ? values : (config?.values ?? []) };
      samplesChanged = true;
    }
    const started = performance.now();
    const took = () => {
      millis[kind] = (millis[kind] ?? 0) + performance.now() - started;
    };
    if (result && typeof result.then === 'function') result.then(took, took);
  }
  return result;
};

// The samples (bodies among their parameters) are written only when a new kind appears: rewriting megabytes every
// 200 ms would cost the measured process more than what it measures.
let samplesChanged = false;
function flush() {
  if (!path) return;
  writeFileSync(path, JSON.stringify({ counts, millis }));
  if (samplesChanged) {
    samplesChanged = false;
    writeFileSync(`${path}.samples`, JSON.stringify(samples));
  }
}
setInterval(flush, 200).unref();
process.on('exit', flush);
