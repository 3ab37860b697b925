// The database a benchmark fills: a SQLite file in its temporary folder, or, given a postgres:// URL,
// a fresh database made on that server for the run and dropped after it.
import { existsSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { isPostgresUrl } from "../src/storage/database.js";

export interface BenchDatabase {
  url: string;
  /** Whether it holds a store to reuse: asked to keep one, and a SQLite file is there. */
  reuse: boolean;
  /** Drops the PostgreSQL database made for the run; nothing for SQLite (its folder goes with the run's). */
  drop(): Promise<void>;
}

/**
 * `url` (a SQLite path, or a PostgreSQL server), else `bench.sqlite` in `dir`; `label` names a
 * PostgreSQL database. `keep`: a SQLite file that exists is reused (--keep).
 */
export async function benchDatabase(url: string | undefined, dir: string, label: string, keep = false): Promise<BenchDatabase> {
  if (url === undefined || !isPostgresUrl(url)) {
    const path = url ?? join(dir, "bench.sqlite");
    return { url: path, reuse: keep && existsSync(path), drop: async () => {} };
  }
  const name = `eadmin_bench_${label}_${process.pid}`; // letters, digits and _ only
  const query = async (text: string) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(text);
    } finally {
      await client.end();
    }
  };
  await query(`create database ${name}`);
  const fresh = new URL(url);
  fresh.pathname = `/${name}`;
  return { url: fresh.toString(), reuse: false, drop: () => query(`drop database if exists ${name} with (force)`) };
}
