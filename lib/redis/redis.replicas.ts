import type { Cluster, Redis } from 'ioredis';
import type { PaymentsLogger } from '../core/common/index.js';
import type { ResolvedStoreOptions } from './redis.options.js';

/** What {@link writeThenWait} needs of the store's connection (its one client, its bounded calls). */
export interface ReplicatedConnection {
  /** The resolved `replicas` option. */
  readonly replicas: ResolvedStoreOptions['replicas'];
  /** The client the store's writes go through. */
  readonly client: Redis;
  /** Sends one call, bounded by the store's operation timeout. */
  run<T>(operation: string, send: () => Promise<T>): Promise<T>;
}

// The writes a failover must not lose (an order's settlement, a done marker) wait for replicas
// (`replicas` option, redis.options.ts), and the master's replicas are compared with that option
// once, after the store's first operation.

/** Code of the error of a write that fewer replicas than `replicas.wait` acknowledged (Redis's own word for it). */
export const NO_REPLICAS_CODE = 'NOREPLICAS';

/** A script, its keys (all in one slot) and its arguments. */
export interface ScriptCall {
  /** The Lua. */
  lua: string;
  /** Its keys. */
  keys: string[];
  /** Its arguments. */
  args: Array<string | number>;
}

/**
 * Runs `script`, then `WAIT` for `replicas.wait` replicas on the same connection, in one round
 * trip (a pipeline; on a cluster, to the master of the keys' slot). `WAIT` counts the replicas
 * that have every write this connection sent so far, and the replication stream is in order, so
 * a value the script read (written by another connection) is covered when the script rewrote it.
 * Plain `EVAL` rather than the defined command: a script missing from the server's cache would
 * be sent again after the pipeline, after the `WAIT`.
 * @returns the script's reply
 * @throws the script's error, or an error with code {@link NO_REPLICAS_CODE} when fewer replicas
 *   acknowledged it within `replicas.timeoutMs`
 */
export async function writeThenWait(
  db: ReplicatedConnection,
  operation: string,
  what: string,
  script: ScriptCall,
): Promise<unknown> {
  const { wait, timeoutMs } = db.replicas;
  const replies = await db.run(operation, () =>
    db.client
      .pipeline()
      .eval(script.lua, script.keys.length, ...script.keys, ...script.args)
      .wait(wait, timeoutMs)
      .exec(),
  );
  const [written, waited] = replies ?? [];
  if (!written || !waited) throw new Error(`RedisPaymentsStore: ${operation}: no reply`);
  if (written[0]) throw written[0];
  if (waited[0]) throw waited[0];
  const acks = Number(waited[1]);
  if (!(acks >= wait)) {
    const error = new Error(
      `RedisPaymentsStore: ${operation}: ${what} reached ${acks} of the ${wait} replica(s) required within ${timeoutMs} ms ` +
        `(replicas.wait): not reported done, as a failover could lose it`,
    );
    throw Object.assign(error, { code: NO_REPLICAS_CODE });
  }
  return written[1];
}

/** What `INFO replication` of one node says that matters here. */
export interface NodeReplication {
  /** The node, for the message (`127.0.0.1:6379`). */
  node: string;
  /** The text of `INFO replication`. */
  info: string;
}

/**
 * The warning a node's replication deserves, or `undefined`: a master with replicas that nothing
 * waits for (the operator left `replicas.wait` unset: a failover can lose writes), or a master
 * with fewer connected replicas than `replicas.wait` (every settlement fails until they connect).
 * A replica (role `slave`) says nothing of the masters.
 */
export function replicationWarning(
  node: NodeReplication,
  replicas: { wait: number; chosen: boolean },
): string | undefined {
  const role = /^role:(\w+)/m.exec(node.info)?.[1];
  const connected = Number(/^connected_slaves:(\d+)/m.exec(node.info)?.[1]);
  if (role !== 'master' || !Number.isInteger(connected)) return undefined;
  if (connected < replicas.wait) {
    return (
      `Redis master ${node.node} has ${connected} connected replica(s), fewer than replicas.wait (${replicas.wait}): ` +
      'every order settlement and done marker fails (the payment is tried again) until enough replicas are connected'
    );
  }
  if (connected > 0 && !replicas.chosen) {
    return (
      `Redis master ${node.node} has ${connected} replica(s) and the store does not wait for them: a failover ` +
      'can lose an order settlement or a done marker written just before it (the order confirmed again by another ' +
      'payment, handlers run again). Set the store option replicas: { wait: 1 } (or { wait: 0 } to accept that)'
    );
  }
  return undefined;
}

/**
 * Reads `INFO replication` of the master (of every master of a cluster) and logs the warnings of
 * {@link replicationWarning}. Best effort: a server that refuses INFO (some managed services
 * rename it) or a failure of the moment says nothing.
 */
export async function checkReplication(
  client: Redis | Cluster,
  cluster: boolean,
  replicas: { wait: number; chosen: boolean },
  logger: PaymentsLogger,
): Promise<void> {
  const nodes: Redis[] = cluster ? (client as Cluster).nodes('master') : [client as Redis];
  for (const node of nodes) {
    try {
      const info = await node.info('replication');
      const { host, port, sentinels, name: masterName } = node.options;
      const name = sentinels?.length ? `${masterName ?? '?'} (through Sentinel)` : `${host ?? '?'}:${port ?? '?'}`;
      const warning = replicationWarning({ node: name, info }, replicas);
      if (warning) logger.warn(warning);
    } catch {
      // Nothing to say without INFO.
    }
  }
}
