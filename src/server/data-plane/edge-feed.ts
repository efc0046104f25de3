import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { z } from 'zod';
import type { SecretBox } from '../../crypto/secret-box.js';
import {
  type EdgeCommand,
  type EdgeCommandResult,
  type EdgeConfig,
  type EdgeFeedMessage,
  type EdgePeer,
  type EdgeSessionReport,
  edgeCommand,
  edgeCommandResult,
} from '../../schemas/edge-config.js';
import { ApiError } from '../errors/api-error.js';
import type { ChangeSignal, ReplicaChannel } from '../events/change-signal.js';
import type { Db } from '../store/database.js';
import { buildEdgeConfig } from './snapshot.js';

const relayedCommand = z.object({ edge_id: z.string(), command: edgeCommand });
const relayedResult = z.object({ id: z.string(), result: edgeCommandResult });

/** An edge's lease lasts this long; connected edges renew it at a third of that. */
export const EDGE_LEASE_MS = 15_000;
const RENEW_EVERY_MS = EDGE_LEASE_MS / 3;
/** Changes closer together than this are sent as one snapshot. */
const COALESCE_MS = 25;
const PING_EVERY_MS = 15_000;
/** How long an API caller waits for an agent to answer a command. */
export const COMMAND_TIMEOUT_MS = 10_000;

/** One connected edge: where its feed lines go. */
interface EdgeConnection {
  edgeId: string;
  region: string;
  /** The edge takes `peers` lines (it relays); older edges do not. */
  peers?: boolean;
  tunnelAddr?: string | null;
  relayAddr?: string | null;
  send(message: EdgeFeedMessage): void;
}

/** How often the live edges and their sessions are read again for edges that relay (changes made through this replica are sent at once). */
const PEERS_EVERY_MS = 2_000;

interface PendingCommand {
  resolve(result: EdgeCommandResult): void;
  timer: NodeJS.Timeout;
}

/**
 * The control plane's side of the data plane: which edges are connected to this replica, the
 * configuration they are sent (a new snapshot after every committed change), the sessions they
 * hold (leased, so sessions of an edge that vanished disappear), and agent commands relayed to
 * the edge holding the session.
 */
export class EdgeFeed {
  readonly #connections = new Map<string, EdgeConnection>();
  readonly #pending = new Map<string, PendingCommand>();
  #config: EdgeConfig | undefined;
  #refresh: Promise<void> | undefined;
  #refreshAgain = false;
  #timers: NodeJS.Timeout[] = [];
  #closed = false;

  /** Commands this replica passed to its edge for another replica: their results go back there. */
  readonly #relayed = new Set<string>();

  /** The lease expiry this replica last wrote for each edge connected to it. */
  readonly #leasesWritten = new Map<string, string>();

  /** The last `peers` line sent (as JSON), so an unchanged directory is not sent again. */
  #peersSent = '';
  #peersRefresh: Promise<void> | undefined;
  #peersAgain = false;

  constructor(
    private readonly db: Db,
    private readonly secretBox: SecretBox,
    private readonly changes: ChangeSignal,
    private readonly log: FastifyBaseLogger,
  ) {
    changes.on('changed', () => this.#scheduleRefresh());
    changes.on('message', (channel, payload) => this.#onReplicaMessage(channel, payload));
  }

  /** Starts lease renewal and the janitor of sessions whose edge's lease ran out. */
  start(): void {
    const renew = setInterval(() => {
      this.#renewLeases().catch((error: unknown) =>
        this.log.error({ err: error }, 'renewing edge leases failed'),
      );
    }, RENEW_EVERY_MS);
    const ping = setInterval(() => {
      for (const connection of this.#connections.values()) connection.send({ type: 'ping' });
    }, PING_EVERY_MS);
    const peers = setInterval(() => this.#schedulePeers(), PEERS_EVERY_MS);
    this.#timers = [renew, ping, peers];
    for (const timer of this.#timers) timer.unref();
  }

  close(): void {
    this.#closed = true;
    for (const timer of this.#timers) clearInterval(timer);
    for (const pending of this.#pending.values()) clearTimeout(pending.timer);
    this.#pending.clear();
  }

  /** Edges connected to this replica. */
  connectedEdges(): string[] {
    return [...this.#connections.keys()];
  }

  /** The configuration as it is now (built once per change, shared by every edge). */
  async currentConfig(): Promise<EdgeConfig> {
    if (!this.#config) this.#config = await buildEdgeConfig(this.db, this.secretBox);
    return this.#config;
  }

  /**
   * A new feed: the edge gets the current configuration at once, and its lease starts. Returns the
   * function to call when the feed's connection ends.
   */
  async connect(connection: EdgeConnection): Promise<() => Promise<void>> {
    const previous = this.#connections.get(connection.edgeId);
    this.#connections.set(connection.edgeId, connection);
    await this.#upsertLease(connection);
    connection.send({ type: 'config', config: await this.currentConfig() });
    if (connection.peers) connection.send({ type: 'peers', peers: await this.#livePeers() });
    this.#schedulePeers();
    this.log.info(
      { edgeId: connection.edgeId, region: connection.region, replaced: Boolean(previous) },
      'edge connected',
    );
    return async () => {
      // A reconnect may have replaced this feed already: then the sessions belong to the new one.
      if (this.#connections.get(connection.edgeId) !== connection) return;
      this.#connections.delete(connection.edgeId);
      // Only while the lease is still the one this replica wrote: the edge may have moved its feed
      // to another replica (which renewed it) before this one heard the old connection close.
      await this.#forgetEdge(connection.edgeId, this.#leasesWritten.get(connection.edgeId));
      this.#leasesWritten.delete(connection.edgeId);
      this.#schedulePeers();
      this.log.info({ edgeId: connection.edgeId }, 'edge disconnected; its sessions are gone');
    };
  }

  async putSession(edgeId: string, sessionId: string, report: EdgeSessionReport): Promise<void> {
    // Behind a load balancer the report may reach another replica than the feed: the lease says.
    if (!this.#connections.has(edgeId) && !(await this.#hasLease(edgeId))) {
      throw new ApiError('ERR_EDGEWARD_900', `edge_id: edge ${edgeId} has no open feed`);
    }
    const row = {
      id: sessionId,
      edge_id: edgeId,
      started_at: report.started_at,
      agent_version: report.agent_version,
      credential_id: report.credential_id,
      ip: report.ip,
      metadata: report.metadata,
      os: report.os,
      region: report.region,
      transport: report.transport,
      labels: JSON.stringify(report.labels),
    };
    await this.db
      .insertInto('tunnel_sessions')
      .values(row)
      .onConflict((conflict) => conflict.column('id').doUpdateSet({ ...row }))
      .execute();
    this.#schedulePeers();
  }

  async deleteSession(edgeId: string, sessionId: string): Promise<void> {
    await this.db
      .deleteFrom('tunnel_sessions')
      .where('id', '=', sessionId)
      .where('edge_id', '=', edgeId)
      .execute();
    this.#schedulePeers();
  }

  /** Sends the live edges to the edges that relay, when they changed; changes close together are read once. */
  #schedulePeers(): void {
    if (this.#closed) return;
    if (this.#peersRefresh) {
      this.#peersAgain = true;
      return;
    }
    if (![...this.#connections.values()].some((connection) => connection.peers)) return;
    this.#peersRefresh = new Promise<void>((resolve) => setTimeout(resolve, COALESCE_MS))
      .then(async () => {
        const peers = await this.#livePeers();
        const text = JSON.stringify(peers);
        if (text === this.#peersSent) return;
        this.#peersSent = text;
        for (const connection of this.#connections.values())
          if (connection.peers) connection.send({ type: 'peers', peers });
      })
      .catch((error: unknown) => this.log.error({ err: error }, 'reading the live edges failed'))
      .finally(() => {
        this.#peersRefresh = undefined;
        if (this.#peersAgain) {
          this.#peersAgain = false;
          this.#schedulePeers();
        }
      });
  }

  /** Edges whose lease is current, with the sessions they hold (whichever replica they talk to). */
  async #livePeers(): Promise<EdgePeer[]> {
    const edges = await this.db
      .selectFrom('edge_processes')
      .select(['id', 'region', 'tunnel_addr', 'relay_addr'])
      .where('lease_expires_at', '>', new Date().toISOString())
      .orderBy('id')
      .execute();
    if (edges.length === 0) return [];
    const sessions = await this.db
      .selectFrom('tunnel_sessions')
      .select(['id', 'edge_id', 'labels'])
      .where(
        'edge_id',
        'in',
        edges.map((edge) => edge.id),
      )
      .orderBy('id')
      .execute();
    return edges.map((edge) => ({
      id: edge.id,
      region: edge.region,
      tunnel_addr: edge.tunnel_addr,
      relay_addr: edge.relay_addr,
      sessions: sessions
        .filter((session) => session.edge_id === edge.id)
        .map((session) => ({ id: session.id, labels: JSON.parse(session.labels) as Record<string, string> })),
    }));
  }

  /**
   * Relays a command to the edge holding the session and waits for the agent's answer. Refusals
   * (the agent's, or no edge to deliver to) are 400 `ERR_EDGEWARD_900` with the reason.
   */
  async sendCommand(sessionId: string, name: EdgeCommand['name']): Promise<void> {
    const session = await this.db
      .selectFrom('tunnel_sessions')
      .select(['edge_id'])
      .where('id', '=', sessionId)
      .executeTakeFirst();
    if (!session) throw new ApiError('ERR_EDGEWARD_400', `id: tunnel session ${sessionId} not found`);
    const connection = this.#connections.get(session.edge_id);
    // The edge may hold its feed on another replica: on PostgreSQL, that replica passes it on.
    if (!connection && !(this.changes.shared && (await this.#hasLease(session.edge_id)))) {
      throw new ApiError(
        'ERR_EDGEWARD_900',
        `id: the edge holding tunnel session ${sessionId} is not connected; try again`,
      );
    }
    const command: EdgeCommand = { id: randomUUID(), session_id: sessionId, name };
    const result = await new Promise<EdgeCommandResult>((resolve) => {
      const timer = setTimeout(() => {
        this.#pending.delete(command.id);
        const error = connection
          ? `the agent did not answer within ${COMMAND_TIMEOUT_MS / 1000} s`
          : `no edge holding the session answered within ${COMMAND_TIMEOUT_MS / 1000} s`;
        resolve({ ok: false, error });
      }, COMMAND_TIMEOUT_MS);
      this.#pending.set(command.id, { resolve, timer });
      if (connection) {
        connection.send({ type: 'command', command });
        return;
      }
      const relay = JSON.stringify({ edge_id: session.edge_id, command });
      this.changes.publish(this.db, 'edgeward_commands', relay).catch((error: unknown) => {
        this.log.error({ err: error }, 'relaying a command to the other replicas failed');
        this.completeCommand(command.id, { ok: false, error: 'the command could not be relayed; try again' });
      });
    });
    if (!result.ok) throw new ApiError('ERR_EDGEWARD_900', `id: ${name}: ${result.error}`);
  }

  /** The edge's report of what the agent answered; unknown or late ids are ignored. */
  completeCommand(commandId: string, result: EdgeCommandResult): boolean {
    const pending = this.#pending.get(commandId);
    if (!pending && this.#relayed.delete(commandId)) {
      const payload = JSON.stringify({ id: commandId, result });
      this.changes.publish(this.db, 'edgeward_command_results', payload).catch((error: unknown) => {
        this.log.error({ err: error, commandId }, 'returning a relayed command result failed');
      });
      return true;
    }
    if (!pending) return false;
    this.#pending.delete(commandId);
    clearTimeout(pending.timer);
    pending.resolve(result);
    return true;
  }

  /** A command for an edge connected here, or the result of one this replica relayed. */
  #onReplicaMessage(channel: ReplicaChannel, payload: string): void {
    try {
      if (channel === 'edgeward_commands') {
        const relay = relayedCommand.parse(JSON.parse(payload));
        const connection = this.#connections.get(relay.edge_id);
        // Only the replica holding the edge's feed acts; the sender waits for the result.
        if (!connection || this.#pending.has(relay.command.id)) return;
        this.#relayed.add(relay.command.id);
        setTimeout(() => this.#relayed.delete(relay.command.id), COMMAND_TIMEOUT_MS).unref();
        connection.send({ type: 'command', command: relay.command });
      } else {
        const relay = relayedResult.parse(JSON.parse(payload));
        const pending = this.#pending.get(relay.id);
        if (!pending) return;
        this.#pending.delete(relay.id);
        clearTimeout(pending.timer);
        pending.resolve(relay.result);
      }
    } catch (error) {
      this.log.warn({ err: error, channel }, 'ignoring a malformed message from another replica');
    }
  }

  #scheduleRefresh(): void {
    if (this.#closed) return;
    if (this.#connections.size === 0) {
      // No edge to tell: build the next snapshot when one connects, not on every write.
      this.#config = undefined;
      return;
    }
    if (this.#refresh) {
      this.#refreshAgain = true;
      return;
    }
    this.#refresh = new Promise<void>((resolve) => setTimeout(resolve, COALESCE_MS))
      .then(() => this.#pushNewConfig())
      .catch((error: unknown) => this.log.error({ err: error }, 'building the edge configuration failed'))
      .finally(() => {
        this.#refresh = undefined;
        if (this.#refreshAgain) {
          this.#refreshAgain = false;
          this.#scheduleRefresh();
        }
      });
  }

  async #pushNewConfig(): Promise<void> {
    const config = await buildEdgeConfig(this.db, this.secretBox);
    if (config.revision === this.#config?.revision) return;
    this.#config = config;
    for (const connection of this.#connections.values()) connection.send({ type: 'config', config });
  }

  async #hasLease(edgeId: string): Promise<boolean> {
    const lease = await this.db
      .selectFrom('edge_processes')
      .select('id')
      .where('id', '=', edgeId)
      .where('lease_expires_at', '>', new Date().toISOString())
      .executeTakeFirst();
    return lease !== undefined;
  }

  async #upsertLease(connection: EdgeConnection): Promise<void> {
    const lease = {
      id: connection.edgeId,
      region: connection.region,
      lease_expires_at: new Date(Date.now() + EDGE_LEASE_MS).toISOString(),
      tunnel_addr: connection.tunnelAddr ?? null,
      relay_addr: connection.relayAddr ?? null,
    };
    const { id: _id, ...update } = lease;
    await this.db
      .insertInto('edge_processes')
      .values(lease)
      .onConflict((conflict) => conflict.column('id').doUpdateSet(update))
      .execute();
    this.#leasesWritten.set(connection.edgeId, lease.lease_expires_at);
  }

  async #renewLeases(): Promise<void> {
    for (const connection of this.#connections.values()) await this.#upsertLease(connection);
    // Sessions of edges whose lease ran out (an edge, or the replica it talked to, died).
    const now = new Date().toISOString();
    const expired = await this.db
      .selectFrom('edge_processes')
      .select('id')
      .where('lease_expires_at', '<', now)
      .execute();
    for (const { id } of expired) await this.#forgetEdge(id);
  }

  /** Forgets an edge and its sessions; with `onlyLease`, only if its lease is still that one. */
  async #forgetEdge(edgeId: string, onlyLease?: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      let forget = trx.deleteFrom('edge_processes').where('id', '=', edgeId);
      if (onlyLease !== undefined) forget = forget.where('lease_expires_at', '=', onlyLease);
      const { numDeletedRows } = await forget.executeTakeFirst();
      if (onlyLease !== undefined && numDeletedRows === 0n) return;
      await trx.deleteFrom('tunnel_sessions').where('edge_id', '=', edgeId).execute();
    });
  }
}
