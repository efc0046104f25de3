import net from 'node:net';

/** What the edge does with one accepted connection on a TCP edge's port. */
export type TcpConnectionHandler = (port: number, socket: net.Socket) => void;

export interface TcpListenerEvents {
  listening(port: number): void;
  failed(port: number, error: Error): void;
  stopped(port: number): void;
}

/**
 * One listener per port of a TCP edge's reserved addresses, opened and closed as the configuration
 * changes. A closed listener stops accepting; connections it carried run until they end.
 */
export class TcpListeners {
  readonly #servers = new Map<number, net.Server>();

  constructor(
    private readonly host: string,
    private readonly onConnection: TcpConnectionHandler,
    private readonly events: TcpListenerEvents,
  ) {}

  ports(): number[] {
    return [...this.#servers.keys()];
  }

  /** Listens on exactly `ports`: new ones are opened, gone ones closed. */
  apply(ports: ReadonlySet<number>): void {
    for (const [port, server] of this.#servers) {
      if (ports.has(port)) continue;
      this.#servers.delete(port);
      server.close();
      this.events.stopped(port);
    }
    for (const port of ports) {
      if (this.#servers.has(port)) continue;
      // Half-open: a client that ends its side still gets the whole answer.
      const server = net.createServer({ noDelay: true, allowHalfOpen: true }, (socket) =>
        this.onConnection(port, socket),
      );
      this.#servers.set(port, server);
      server.once('listening', () => this.events.listening(port));
      server.on('error', (error) => {
        // A port another process holds: say so; the next configuration change tries again.
        if (this.#servers.get(port) === server) this.#servers.delete(port);
        this.events.failed(port, error);
      });
      server.listen(port, this.host);
    }
  }

  async close(): Promise<void> {
    const servers = [...this.#servers.values()];
    this.#servers.clear();
    await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
  }
}
