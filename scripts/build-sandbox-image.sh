#!/usr/bin/env bash
# Build a minimal sandbox image offline, from the host's static busybox: no registry is
# needed. For a richer (Debian) sandbox on an engine that can pull, see docker/sandbox.
# What a sandbox image needs: docs/sandbox-images.md.
set -euo pipefail
usage() {
  cat <<'USAGE'
Usage: scripts/build-sandbox-image.sh [repo:tag]

Builds a busybox sandbox image (sh and the busybox tools, nothing else) from the host's
/bin/busybox (apt-get install busybox-static) and imports it into the engine under repo:tag
(default mediagate-sandbox:test). Does nothing when that image is already there.

Example:
  scripts/build-sandbox-image.sh mediagate-sandbox:local   # the gateway's default sandbox.image
USAGE
}
case "${1:-}" in -h | --help) usage; exit 0 ;; esac
ref=${1:-mediagate-sandbox:test}
repo=${ref%%@*}
repo=${repo%:*}
if [ "$repo" != mediagate-sandbox ]; then
  echo "note: $ref will be a busybox image, whatever its name says (mediagate-sandbox:<tag> avoids the confusion)" >&2
fi
if docker image inspect "$ref" >/dev/null 2>&1; then
  echo "sandbox image $ref present"
  exit 0
fi
bb=/bin/busybox
[ -x "$bb" ] || { echo "busybox not found at $bb: apt-get install -y busybox-static" >&2; exit 1; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,etc,tmp,workspace,root,proc,sys,dev}
chmod 1777 "$root/tmp"
cp "$bb" "$root/bin/busybox"
for applet in $("$bb" --list); do
  [ "$applet" = busybox ] || ln -s busybox "$root/bin/$applet"
done
echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
echo 'root:x:0:' >"$root/etc/group"
tar -C "$root" -c . | docker import -c 'ENV PATH=/bin' -c 'WORKDIR /workspace' -c 'CMD ["/bin/sh"]' - "$ref" >/dev/null
echo "built sandbox image $ref from busybox"
