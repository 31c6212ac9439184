// Where a run's CPU went, read from /proc (Linux): the server under load, PostgreSQL's processes, this process (the
// load generator) and the machine as a whole. Elsewhere every reading is NaN and the report says n/a.
import { readdirSync, readFileSync } from 'node:fs';
import { median } from './stats.js';

/** Clock ticks per second of /proc's CPU counters (USER_HZ, 100 on Linux). */
const TICKS = 100;

/** CPU seconds used so far, by part; NaN where /proc could not be read. */
export interface CpuReading {
  server: number;
  postgres: number;
  loadGenerator: number;
  machineBusy: number;
  machineTotal: number;
}

/**
 * CPU seconds of process `pid`; with `reapedChildren`, plus those of its children that have exited (a server's
 * backends that closed: their time moves to the parent that waited for them).
 */
function processSeconds(pid: number, reapedChildren = false): number {
  try {
    // Fields after the command name (which may hold spaces): utime, stime, cutime and cstime are the 12th to 15th.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    const own = Number(fields[11]) + Number(fields[12]);
    return (reapedChildren ? own + Number(fields[13]) + Number(fields[14]) : own) / TICKS;
  } catch {
    return Number.NaN;
  }
}

function postgresSeconds(): number {
  let total = 0;
  try {
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      let name = '';
      try {
        name = readFileSync(`/proc/${entry}/comm`, 'utf8');
      } catch {
        continue; // gone meanwhile
      }
      // Backends come and go (a pool closes idle connections): the exited ones count through the postmaster's
      // reaped children, so that the sum only grows.
      if (name.startsWith('postgres')) total += processSeconds(Number(entry), true) || 0;
    }
  } catch {
    return Number.NaN;
  }
  return total;
}

function machineSeconds(): { busy: number; total: number } {
  try {
    const counters = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const total = counters.reduce((sum, value) => sum + value, 0);
    // idle and iowait are the 4th and 5th counters.
    return { busy: (total - counters[3]! - counters[4]!) / TICKS, total: total / TICKS };
  } catch {
    return { busy: Number.NaN, total: Number.NaN };
  }
}

/**
 * The counters now; `server` sums the processes `serverPids` (a drain's workers: one or two), NaN when none is given
 * or one could not be read.
 */
export function readCpu(serverPids: readonly (number | undefined)[]): CpuReading {
  const own = process.cpuUsage();
  const machine = machineSeconds();
  return {
    server:
      serverPids.length === 0
        ? Number.NaN
        : serverPids.reduce<number>((sum, pid) => sum + (pid === undefined ? Number.NaN : processSeconds(pid)), 0),
    postgres: postgresSeconds(),
    loadGenerator: (own.user + own.system) / 1e6,
    machineBusy: machine.busy,
    machineTotal: machine.total,
  };
}

/** CPU per request, in µs, between two readings, and the machine's busy share of what its cores had. */
export interface CpuPerRequest {
  serverUs: number;
  postgresUs: number;
  loadGeneratorUs: number;
  machineUs: number;
  machineBusyShare: number;
}

export function cpuPerRequest(before: CpuReading, after: CpuReading, requests: number): CpuPerRequest {
  const us = (seconds: number) => (seconds / requests) * 1e6;
  return {
    serverUs: us(after.server - before.server),
    postgresUs: us(after.postgres - before.postgres),
    loadGeneratorUs: us(after.loadGenerator - before.loadGenerator),
    machineUs: us(after.machineBusy - before.machineBusy),
    machineBusyShare: (after.machineBusy - before.machineBusy) / (after.machineTotal - before.machineTotal),
  };
}

/** The median of each figure of some runs' readings, on its own. */
export function medianCpu(readings: readonly CpuPerRequest[]): CpuPerRequest {
  const of = (figure: keyof CpuPerRequest) => median(readings.map((reading) => reading[figure]));
  return {
    serverUs: of('serverUs'),
    postgresUs: of('postgresUs'),
    loadGeneratorUs: of('loadGeneratorUs'),
    machineUs: of('machineUs'),
    machineBusyShare: of('machineBusyShare'),
  };
}
