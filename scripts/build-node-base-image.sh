#!/usr/bin/env bash
# Build a stand-in for node:20-bookworm-slim on a machine whose engine cannot pull images:
# a Debian bookworm rootfs made by debootstrap from Debian packages, plus this host's node,
# npm and node headers under /usr/local (where the official image keeps them), imported into
# the engine. The gateway's Dockerfile then builds on it with
#   docker build --build-arg NODE_IMAGE=<ref> -f docker/gateway/Dockerfile .
# Usage: build-node-base-image.sh [repo:tag]   (default mediagate-node-base:local)
# Needs root (debootstrap) and a Debian mirror ($DEBIAN_MIRROR, default deb.debian.org).
set -euo pipefail
ref=${1:-mediagate-node-base:local}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

if docker image inspect "$ref" >/dev/null 2>&1; then
  echo "node base image $ref present"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "build-node-base-image: debootstrap needs root" >&2
  exit 1
fi

node_bin=$(command -v node)
node_prefix=$(dirname "$(dirname "$(readlink -f "$node_bin")")")
npm_dir=$node_prefix/lib/node_modules/npm
headers=$node_prefix/include/node
for need in "$npm_dir/bin/npm-cli.js" "$headers/node.h"; do
  [ -e "$need" ] || { echo "build-node-base-image: $need not found next to $node_bin" >&2; exit 1; }
done
if ! command -v debootstrap >/dev/null 2>&1; then
  echo "build-node-base-image: installing debootstrap from Debian packages"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap
fi

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
echo "build-node-base-image: debootstrap bookworm (minbase) from $mirror; this takes a few minutes"
debootstrap --variant=minbase bookworm "$root" "$mirror"

echo "build-node-base-image: adding node $("$node_bin" --version) from $node_prefix"
mkdir -p "$root/usr/local/bin" "$root/usr/local/lib/node_modules" "$root/usr/local/include"
cp "$(readlink -f "$node_bin")" "$root/usr/local/bin/node"
cp -a "$npm_dir" "$root/usr/local/lib/node_modules/npm"
cp -a "$headers" "$root/usr/local/include/node"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
chroot "$root" /usr/local/bin/node --version >/dev/null
# The host's CA bundle, so that npm in a build trusts what the host trusts (a network may
# reach the registry through a TLS-inspecting proxy with its own CA).
bundle=/etc/ssl/certs/ca-certificates.crt
ca_env=()
if [ -s "$bundle" ]; then
  mkdir -p "$root/etc/ssl/certs"
  cp "$bundle" "$root$bundle"
  ca_env=(-c "ENV NODE_EXTRA_CA_CERTS=$bundle")
fi

# What the official slim image leaves out too: package lists, caches, docs.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
  "$root"/usr/share/doc/* "$root"/usr/share/man/*

echo "build-node-base-image: importing into the engine as $ref"
tar -C "$root" -c . | docker import \
  -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  "${ca_env[@]}" -c 'CMD ["node"]' - "$ref" >/dev/null
echo "built node base image $ref"
