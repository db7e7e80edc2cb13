import { createHash, randomBytes } from "node:crypto";
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { extract, pack } from "tar-stream";

/** Media types of the Docker image manifest, schema 2 (what `docker pull` asks for first). */
const MediaTypes = {
  manifest: "application/vnd.docker.distribution.manifest.v2+json",
  config: "application/vnd.docker.container.image.v1+json",
  layer: "application/vnd.docker.image.rootfs.diff.tar.gzip",
} as const;

interface Blob {
  readonly digest: string;
  readonly bytes: Buffer;
}

/** One image the registry serves: its manifest and the blobs it names. */
interface StoredImage {
  readonly manifest: Blob;
  readonly config: Blob;
  readonly layers: readonly Blob[];
}

/** One request the fake answered, in arrival order. */
export interface RegistryRequest {
  readonly method: string;
  readonly path: string;
  readonly status: number;
}

function blobOf(bytes: Buffer): Blob {
  return { digest: sha256(bytes), bytes };
}

/** The files of a `docker save` archive (small images only: everything is held in memory). */
async function readArchive(archive: Buffer): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  const parser = extract();
  parser.on("entry", (header, stream, next) => {
    const chunks: Buffer[] = [];
    stream.on("data", (chunk: unknown) => {
      if (Buffer.isBuffer(chunk)) chunks.push(chunk);
    });
    stream.on("end", () => {
      if (header.type === "file") files.set(header.name, Buffer.concat(chunks));
      next();
    });
    stream.resume();
  });
  const finished = once(parser, "finish");
  parser.end(archive);
  await finished;
  return files;
}

/** A layer (uncompressed tar) holding one file of `size` random bytes. */
async function randomLayer(size: number): Promise<Buffer> {
  const tar = pack();
  const chunks: Buffer[] = [];
  tar.on("data", (chunk: unknown) => {
    if (Buffer.isBuffer(chunk)) chunks.push(chunk);
  });
  const ended = once(tar, "end");
  tar.entry({ name: "etc/", type: "directory", mode: 0o755 });
  tar.entry(
    { name: `etc/fake-registry-${randomBytes(6).toString("hex")}`, mode: 0o644 },
    randomBytes(size),
  );
  tar.finalize();
  await ended;
  return Buffer.concat(chunks);
}

function sha256(bytes: Buffer): string {
  return `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
}

/**
 * The image of a `docker save` archive with `extra` appended as its top layer (so the engine
 * has to download at least that layer, whatever it already holds).
 */
function imageFromArchive(files: Map<string, Buffer>, extra: Buffer): StoredImage {
  const index = files.get("manifest.json");
  if (index === undefined) throw new Error("not a docker save archive: no manifest.json");
  const [entry] = JSON.parse(index.toString("utf8")) as { Config: string; Layers: string[] }[];
  if (entry === undefined) throw new Error("docker save archive lists no image");
  const need = (name: string) => {
    const bytes = files.get(name);
    if (bytes === undefined) throw new Error(`docker save archive has no ${name}`);
    return bytes;
  };
  const original = JSON.parse(need(entry.Config).toString("utf8")) as {
    rootfs: { diff_ids: string[] };
    history?: unknown[];
  };
  original.rootfs.diff_ids.push(sha256(extra));
  original.history?.push({ created: new Date(0).toISOString(), created_by: "fake registry" });
  const config = blobOf(Buffer.from(JSON.stringify(original)));
  const layers = [...entry.Layers.map(need), extra].map((tar) => blobOf(gzipSync(tar)));
  const manifest = blobOf(
    Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: MediaTypes.manifest,
        config: { mediaType: MediaTypes.config, size: config.bytes.length, digest: config.digest },
        layers: layers.map((layer) => ({
          mediaType: MediaTypes.layer,
          size: layer.bytes.length,
          digest: layer.digest,
        })),
      }),
    ),
  );
  return { manifest, config, layers };
}

/**
 * A local Docker registry (the v2 distribution API, read only) for pull tests: the engine
 * pulls from `127.0.0.1:<port>/<name>:<tag>` over plain HTTP, which it allows for loopback
 * registries without any daemon setting. Images are added from a `docker save` archive and
 * served with gzip layers under a schema-2 manifest. No registry is reachable from this
 * machine otherwise, and no registry image can be pulled to run a real one.
 */
export class FakeRegistry {
  readonly requests: RegistryRequest[] = [];
  readonly #server: Server;
  readonly #images = new Map<string, StoredImage>();
  readonly #blobs = new Map<string, Blob>();
  /** Blob digests whose download is held open (headers and half the bytes sent) until closed. */
  readonly #stalled = new Set<string>();
  #port = 0;

  private constructor() {
    this.#server = createServer((req, res) => this.#handle(req, res));
  }

  static async start(): Promise<FakeRegistry> {
    const fake = new FakeRegistry();
    fake.#server.listen(0, "127.0.0.1");
    await once(fake.#server, "listening");
    fake.#port = (fake.#server.address() as AddressInfo).port;
    return fake;
  }

  /** `127.0.0.1:<port>`: the registry part of image references served here. */
  get host(): string {
    return `127.0.0.1:${this.#port}`;
  }

  /**
   * Serves the image in `archive` (what `docker save` writes for one image) as
   * `<host>/<name>:<tag>`, with one more layer on top: a file of `uniqueLayerBytes` random
   * bytes (default 256 KiB), so the image is new to the engine and that layer is downloaded.
   * Returns the reference, and the size of that top layer as served (gzip).
   */
  async addImage(
    name: string,
    tag: string,
    archive: Buffer,
    options: { uniqueLayerBytes?: number | undefined } = {},
  ): Promise<{ ref: string; uniqueLayerBytes: number }> {
    const extra = await randomLayer(options.uniqueLayerBytes ?? 256 * 1024);
    const image = imageFromArchive(await readArchive(archive), extra);
    this.#images.set(`${name}:${tag}`, image);
    for (const blob of [image.config, ...image.layers]) this.#blobs.set(blob.digest, blob);
    const top = image.layers.at(-1);
    return { ref: `${this.host}/${name}:${tag}`, uniqueLayerBytes: top?.bytes.length ?? 0 };
  }

  /** Downloads of the top (unique) layer of `name:tag` send half its bytes, then hang. */
  stallTopLayer(name: string, tag: string): void {
    const top = this.#images.get(`${name}:${tag}`)?.layers.at(-1);
    if (top === undefined) throw new Error(`FakeRegistry: no image ${name}:${tag}`);
    this.#stalled.add(top.digest);
  }

  /** Drops open connections (stalled downloads included) and stops listening. */
  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve, reject) =>
      this.#server.close((error) => (error ? reject(error) : resolve())),
    );
  }

  #handle(req: IncomingMessage, res: ServerResponse): void {
    const method = req.method ?? "GET";
    const path = new URL(req.url ?? "/", "http://registry").pathname;
    const answer = (status: number, body: Buffer, headers: Record<string, string> = {}) => {
      this.requests.push({ method, path, status });
      res.writeHead(status, {
        "docker-distribution-api-version": "registry/2.0",
        "content-length": String(body.length),
        ...headers,
      });
      res.end(method === "HEAD" ? undefined : body);
    };
    const notFound = (code: string) =>
      answer(
        404,
        Buffer.from(JSON.stringify({ errors: [{ code, message: code.toLowerCase() }] })),
        {
          "content-type": "application/json",
        },
      );
    if (path === "/v2/" || path === "/v2") {
      answer(200, Buffer.from("{}"), { "content-type": "application/json" });
      return;
    }
    const manifest = /^\/v2\/(.+)\/manifests\/([^/]+)$/.exec(path);
    if (manifest !== null) {
      const [, name = "", reference = ""] = manifest;
      const image =
        this.#images.get(`${name}:${reference}`) ??
        [...this.#images.values()].find((i) => i.manifest.digest === reference);
      if (image === undefined) {
        notFound("MANIFEST_UNKNOWN");
        return;
      }
      answer(200, image.manifest.bytes, {
        "content-type": MediaTypes.manifest,
        "docker-content-digest": image.manifest.digest,
      });
      return;
    }
    const blob = /^\/v2\/.+\/blobs\/(sha256:[0-9a-f]{64})$/.exec(path);
    const found = blob?.[1] === undefined ? undefined : this.#blobs.get(blob[1]);
    if (found === undefined) {
      notFound("BLOB_UNKNOWN");
      return;
    }
    if (method === "GET" && this.#stalled.has(found.digest)) {
      this.requests.push({ method, path, status: 200 });
      res.writeHead(200, {
        "content-type": "application/octet-stream",
        "content-length": String(found.bytes.length),
        "docker-content-digest": found.digest,
      });
      res.write(found.bytes.subarray(0, Math.floor(found.bytes.length / 2)));
      return;
    }
    answer(200, found.bytes, {
      "content-type": "application/octet-stream",
      "docker-content-digest": found.digest,
    });
  }
}
