// A hot query's SQL, compiled once per shape and run with each call's values. Kysely builds and
// compiles a query on every call: for a batch read of 100 ids that costs about as much CPU as the
// rest of the call's storage work. A query whose SQL depends only on its shape (how many items its
// lists have, its booleans and absent values) is compiled here once per shape, with stand-ins for
// its values, and each call runs that SQL with its own values in the stand-ins' places.
import type { Compilable, CompiledQuery, Kysely } from "kysely";
import type { Schema } from "./schema.js";

/** A query's arguments: values (strings, numbers, bigints) and lists of them, plus what shapes it. */
type Argument = string | number | bigint | boolean | null | undefined | readonly Argument[];

/** Stands in for the argument value at `index` (in reading order) while a shape is compiled. */
class StandIn {
  constructor(readonly index: number) {}
}

interface Shape {
  query: CompiledQuery;
  /** The compiled parameters: a StandIn where a call's value goes, else a constant of the query. */
  parameters: readonly unknown[];
}

/** Shapes kept per query before they are dropped (a bound for arguments of many list lengths). */
const MAX_SHAPES = 1000;

/**
 * `build` as a function that runs its query's rows. `build` must take its values only as query
 * values (never as identifiers or raw SQL); a value that is not a parameter fails its shape's compile.
 */
export function reusedQuery<Args extends Argument[], Row>(db: Kysely<Schema>, build: (...args: Args) => Compilable<Row>): (...args: Args) => Promise<Row[]> {
  const shapes = new Map<string, Shape>();
  return async (...args: Args) => {
    const values: unknown[] = [];
    const key = readArguments(args, values);
    let shape = shapes.get(key);
    if (!shape) {
      if (shapes.size >= MAX_SHAPES) shapes.clear();
      shape = compileShape(build, args, values.length);
      shapes.set(key, shape);
    }
    const parameters = shape.parameters.map((p) => (p instanceof StandIn ? values[p.index] : p));
    return (await db.executeQuery<Row>({ ...shape.query, parameters })).rows;
  };
}

/** The arguments' shape as a key; their values appended to `values` in reading order. */
function readArguments(argument: Argument, values: unknown[]): string {
  if (Array.isArray(argument)) {
    let key = "[";
    for (const item of argument as readonly Argument[]) key += readArguments(item, values);
    return `${key}]`;
  }
  if (typeof argument === "string" || typeof argument === "number" || typeof argument === "bigint") {
    values.push(argument);
    return "?";
  }
  return String(argument);
}

function compileShape<Args extends Argument[], Row>(build: (...args: Args) => Compilable<Row>, args: Args, valueCount: number): Shape {
  let next = 0;
  const standIns = (argument: Argument): unknown => {
    if (Array.isArray(argument)) return (argument as readonly Argument[]).map(standIns);
    if (typeof argument === "string" || typeof argument === "number" || typeof argument === "bigint") return new StandIn(next++);
    return argument;
  };
  const query = build(...(standIns(args) as Args)).compile();
  const placed = new Set(query.parameters.filter((p) => p instanceof StandIn).map((p) => p.index));
  if (placed.size !== valueCount) throw new Error(`reusedQuery: ${valueCount - placed.size} of the query's values are not parameters of its SQL`);
  return { query, parameters: query.parameters };
}
