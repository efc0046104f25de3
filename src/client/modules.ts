import { Collection } from './collection.js';
import type { Transport } from './transport.js';

/** Module name -> [write form, read form], e.g. `{ backend: [BackendModuleInput, BackendModule] }`. */
export type ModuleMap = Record<string, [unknown, unknown]>;

/** PUT/GET/DELETE `<owner>/<module>`: shared by edges and HTTPS routes. */
export class ModuleClient<M extends ModuleMap> {
  constructor(private readonly transport: Transport) {}

  /** Replaces the module completely; references are checked by the server. */
  replace<K extends keyof M & string>(ownerPath: string, name: K, body: M[K][0]): Promise<M[K][1]> {
    return this.transport.send('PUT', `${ownerPath}/${name}`, { body });
  }

  /** Rejects with a 404 `EdgewardApiError` when the module is unset. */
  get<K extends keyof M & string>(ownerPath: string, name: K): Promise<M[K][1]> {
    return this.transport.send('GET', `${ownerPath}/${name}`);
  }

  /** Succeeds when the module is already unset, so a retried delete is safe. */
  async delete(ownerPath: string, name: keyof M & string): Promise<void> {
    await this.transport.send('DELETE', `${ownerPath}/${name}`);
  }
}

/** A collection whose items carry modules (edges): CRUD plus PUT/GET/DELETE of each module. */
export class CollectionWithModules<
  K extends string,
  Item,
  Create,
  Update,
  M extends ModuleMap,
> extends Collection<K, Item, Create, Update> {
  readonly #modules: ModuleClient<M>;

  constructor(transport: Transport, path: string, listKey: K) {
    super(transport, path, listKey);
    this.#modules = new ModuleClient(transport);
  }

  replaceModule<N extends keyof M & string>(id: string, name: N, body: M[N][0]): Promise<M[N][1]> {
    return this.#modules.replace(this.itemPath(id), name, body);
  }

  getModule<N extends keyof M & string>(id: string, name: N): Promise<M[N][1]> {
    return this.#modules.get(this.itemPath(id), name);
  }

  deleteModule(id: string, name: keyof M & string): Promise<void> {
    return this.#modules.delete(this.itemPath(id), name);
  }
}
