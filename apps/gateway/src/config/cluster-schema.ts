import { isAbsolute } from "node:path";
import { z } from "zod";
import type { ClusterSettings } from "./types.js";

/** A replica id: what container labels accept (`[A-Za-z0-9_.-]`, up to 63), starting with a letter or digit. */
export const ReplicaIdPattern = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;

/**
 * `cluster:` (docs/cluster.md): this replica's id among the replicas that share one PostgreSQL
 * store (without it the id is generated once and kept in the home, `replica-id`), and where
 * persistent and `shared:` slots keep their files when every replica sees them (`slotsDir`).
 */
export const clusterSchema = z.strictObject({
  replicaId: z
    .string()
    .regex(ReplicaIdPattern, {
      error:
        'a replica id of letters, digits, "_", "." and "-" (up to 63, starting with a letter or digit), e.g. "gw-1"',
    })
    .optional(),
  slotsDir: z
    .string()
    .refine((dir) => isAbsolute(dir), {
      error:
        'an absolute path every replica sees at the same place (storage they share), e.g. "/mnt/mediagate-slots"',
    })
    .optional(),
});

/** The validated `cluster:` (nothing set: the id comes from the home, slots live in the homes). */
export function resolveCluster(file: z.infer<typeof clusterSchema> | undefined): ClusterSettings {
  return {
    ...(file?.replicaId === undefined ? {} : { replicaId: file.replicaId }),
    ...(file?.slotsDir === undefined ? {} : { slotsDir: file.slotsDir }),
  };
}
