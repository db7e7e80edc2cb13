import { describe, expect, it } from "vitest";
import { missingImageAdvice } from "./image-advice.js";
import { PullProgressTracker } from "./image-pull.js";

/** What the engine (20.10) sent for a two-layer pull from a local registry, in order. */
const PullStream = [
  { status: "Pulling from proto", id: "t1" },
  { status: "Pulling fs layer", progressDetail: {}, id: "4e602e375220" },
  { status: "Pulling fs layer", progressDetail: {}, id: "6246e3e73bb0" },
  { status: "Downloading", progressDetail: { current: 69349, total: 4001472 }, id: "6246e3e73bb0" },
  {
    status: "Downloading",
    progressDetail: { current: 1100000, total: 4001472 },
    id: "6246e3e73bb0",
  },
  {
    status: "Downloading",
    progressDetail: { current: 1200000, total: 4001472 },
    id: "6246e3e73bb0",
  },
  { status: "Downloading", progressDetail: { current: 36581, total: 1057256 }, id: "4e602e375220" },
  { status: "Verifying Checksum", progressDetail: {}, id: "6246e3e73bb0" },
  { status: "Download complete", progressDetail: {}, id: "6246e3e73bb0" },
  { status: "Extracting", progressDetail: { current: 32768, total: 1057256 }, id: "4e602e375220" },
  { status: "Pull complete", progressDetail: {}, id: "4e602e375220" },
  { status: "Pull complete", progressDetail: {}, id: "6246e3e73bb0" },
  { status: "Digest: sha256:96682e6dbba1fb4855927556d21f9ae75fddef7206179c78574581b323523c33" },
  { status: "Status: Downloaded newer image for 127.0.0.1:39291/proto:t1" },
];

describe("PullProgressTracker", () => {
  it("reports the start, each layer's download by quarters, finished layers and the end", () => {
    const tracker = new PullProgressTracker("127.0.0.1:39291/proto:t1");
    const texts = PullStream.map((event) => tracker.update(event)?.text).filter(Boolean);
    expect(texts).toEqual([
      "pulling 127.0.0.1:39291/proto:t1: Pulling from proto",
      "pulling 127.0.0.1:39291/proto:t1: layer 6246e3e73bb0 1% of 4.0 MB (0/2 layers)",
      "pulling 127.0.0.1:39291/proto:t1: layer 6246e3e73bb0 27% of 4.0 MB (0/2 layers)",
      "pulling 127.0.0.1:39291/proto:t1: layer 4e602e375220 3% of 1.1 MB (0/2 layers)",
      "pulling 127.0.0.1:39291/proto:t1: Pull complete 4e602e375220 (1/2 layers)",
      "pulling 127.0.0.1:39291/proto:t1: Pull complete 6246e3e73bb0 (2/2 layers)",
      "pulling 127.0.0.1:39291/proto:t1: Status: Downloaded newer image for 127.0.0.1:39291/proto:t1 (2/2 layers)",
    ]);
    expect(tracker.finalStatus).toBe("Status: Downloaded newer image for 127.0.0.1:39291/proto:t1");
    expect(tracker.error).toBeUndefined();
  });

  it("carries the byte counts of a download report", () => {
    const tracker = new PullProgressTracker("img:1");
    tracker.update(PullStream[1]);
    expect(tracker.update(PullStream[3])).toMatchObject({
      image: "img:1",
      status: "Downloading",
      layer: "6246e3e73bb0",
      currentBytes: 69349,
      totalBytes: 4001472,
      layersDone: 0,
      layers: 2,
    });
  });

  it("keeps the error line of a pull that failed mid-stream, and ignores what it cannot read", () => {
    const tracker = new PullProgressTracker("img:1");
    expect(tracker.update("not an object")).toBeUndefined();
    expect(tracker.update({ id: "x" })).toBeUndefined();
    tracker.update({
      errorDetail: { message: "manifest for img:1 not found: manifest unknown" },
      error: "manifest for img:1 not found: manifest unknown",
    });
    expect(tracker.error).toBe("manifest for img:1 not found: manifest unknown");
    expect(tracker.finalStatus).toBeUndefined();
  });
});

describe("missingImageAdvice", () => {
  it("suggests the offline build under the configured name for mediagate-sandbox images", () => {
    const advice = missingImageAdvice("mediagate-sandbox:local");
    expect(advice).toContain("scripts/build-sandbox-image.sh mediagate-sandbox:local");
    expect(advice).toContain("docker build -t mediagate-sandbox:local docker/sandbox");
  });

  it("never suggests building busybox or the Debian sandbox under another image's name", () => {
    for (const ref of ["python:3.12-slim", "ghcr.io/acme/tools:2", "localhost:5000/py@sha256:ab"]) {
      const advice = missingImageAdvice(ref);
      expect(advice).not.toContain(`build-sandbox-image.sh ${ref}`);
      expect(advice).not.toContain(`-t ${ref}`);
      expect(advice).toContain(`docker pull ${ref}`);
      expect(advice).toContain("scripts/build-sandbox-image.sh mediagate-sandbox:local");
      expect(advice).toContain("sandbox.image: mediagate-sandbox:local");
    }
  });
});
