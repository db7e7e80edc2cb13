import { MediagateError } from "@mediagate/io/mediagate-error";

/** The home's `replica-id` file holds something that is no replica id. */
export class ReplicaIdFileError extends MediagateError {
  override readonly name = "ReplicaIdFileError";
  readonly code = "MG_REPLICA_ID_FILE_INVALID";

  constructor(
    readonly path: string,
    reason: string,
  ) {
    super(
      `${path}: ${reason}; write a valid id into it (letters, digits, "_", "." and "-", up to 63), set cluster.replicaId in the config, or delete the file to have a new id generated`,
    );
  }
}

/**
 * A replica holding a bot's Discord connection lost its lease (it could not renew it in time:
 * PostgreSQL cut off): it closed the connection and the gateway stops, so that another replica
 * takes the bot over; a supervisor starts it again as a follower.
 */
export class LeadershipLostError extends MediagateError {
  override readonly name = "LeadershipLostError";
  readonly code = "MG_CLUSTER_LEADERSHIP_LOST";

  constructor(readonly platform: string) {
    super(
      `this replica lost its ${platform} bot's lease (it could not renew it in time: is PostgreSQL reachable?); it closed the connection and stops so another replica takes over (docs/cluster.md)`,
    );
  }
}

/** Another live process is registered under this replica id. */
export class ReplicaIdTakenError extends MediagateError {
  override readonly name = "ReplicaIdTakenError";
  readonly code = "MG_REPLICA_ID_TAKEN";

  constructor(
    readonly replicaId: string,
    readonly host: string,
  ) {
    super(
      `replica id ${replicaId} is held by a live gateway on ${host}: two replicas cannot share one id; give each replica its own home or its own cluster.replicaId (docs/cluster.md)`,
    );
  }
}
