import type Docker from "dockerode";

/**
 * The dockerode client behind each `DockerEngine`, kept out of the engine's public shape
 * so no dockerode type appears in this package's declarations.
 */
const clients = new WeakMap<object, Docker>();

export function attachClient(engine: object, client: Docker): void {
  clients.set(engine, client);
}

export function dockerOf(engine: object): Docker {
  const client = clients.get(engine);
  if (client === undefined) throw new TypeError("DockerEngine was not created by connectDocker()");
  return client;
}
