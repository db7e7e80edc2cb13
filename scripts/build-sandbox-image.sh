#!/usr/bin/env bash
# Build a minimal sandbox image from the host's static busybox (no registry is reachable
# here, so nothing can be pulled). Usage: build-sandbox-image.sh [repo:tag]
set -euo pipefail
ref=${1:-mediagate-sandbox:test}
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
