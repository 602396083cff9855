import { performance } from 'node:perf_hooks';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Db } from '../../db/knex.ts';
import { PREFIX } from './names.ts';

/** The parts of Knex's connection pool (tarn) read here. */
interface Pool {
  on(event: 'acquireRequest' | 'acquireSuccess' | 'acquireFail', listener: (eventId: number) => void): void;
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
}

/**
 * How long statements wait for a database connection. Every query and transaction takes a
 * connection from Knex's pool first: on SQLite the pool is its one connection, so a statement
 * waits there while a transaction holds it (the pool's queue is the statement queue); on
 * PostgreSQL, while every connection of the pool is in use. The waits are a histogram, the
 * waiting statements and the connections in use gauges read on each scrape (`refresh`).
 */
export function watchPool(db: Db, registry: Registry): { refresh(): void } {
  const pool = (db.client as { pool?: Pool }).pool;
  const registers = [registry];
  const waits = new Histogram({
    name: `${PREFIX}db_pool_acquire_wait_seconds`,
    help: 'How long a statement or transaction waited for a database connection (SQLite: its one connection).',
    buckets: [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
    registers,
  });
  const failures = new Counter({
    name: `${PREFIX}db_pool_acquire_failures_total`,
    help: 'Statements that got no database connection (the pool timed out or was closed).',
    registers,
  });
  const pending = new Gauge({ name: `${PREFIX}db_pool_pending_acquires`, help: 'Statements waiting for a database connection now.', registers });
  const connections = new Gauge({ name: `${PREFIX}db_pool_connections`, help: 'Database connections of the pool, by state (used, free).', labelNames: ['state'], registers });
  if (!pool) return { refresh: () => undefined };
  const asked = new Map<number, number>();
  pool.on('acquireRequest', (eventId) => asked.set(eventId, performance.now()));
  pool.on('acquireSuccess', (eventId) => {
    const at = asked.get(eventId);
    if (at === undefined) return;
    asked.delete(eventId);
    waits.observe((performance.now() - at) / 1000);
  });
  pool.on('acquireFail', (eventId) => {
    asked.delete(eventId);
    failures.inc();
  });
  return {
    refresh() {
      pending.set(pool.numPendingAcquires());
      connections.set({ state: 'used' }, pool.numUsed());
      connections.set({ state: 'free' }, pool.numFree());
    },
  };
}
