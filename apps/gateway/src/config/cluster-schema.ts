import { z } from "zod";
import type { ClusterSettings } from "./types.js";

/** A replica id: what container labels accept (`[A-Za-z0-9_.-]`, up to 63), starting with a letter or digit. */
export const ReplicaIdPattern = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;

/**
 * `cluster:` (docs/cluster.md): this replica's id among the replicas that share one PostgreSQL
 * store. Without it the id is generated once and kept in the home (`replica-id`).
 */
export const clusterSchema = z.strictObject({
  replicaId: z
    .string()
    .regex(ReplicaIdPattern, {
      error:
        'a replica id of letters, digits, "_", "." and "-" (up to 63, starting with a letter or digit), e.g. "gw-1"',
    })
    .optional(),
});

/** The validated `cluster:` (nothing set: the id comes from the home). */
export function resolveCluster(file: z.infer<typeof clusterSchema> | undefined): ClusterSettings {
  return file?.replicaId === undefined ? {} : { replicaId: file.replicaId };
}
