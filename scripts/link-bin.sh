#!/usr/bin/env bash
# Make `mediagate` callable from anywhere: a symlink <bin dir>/mediagate -> this clone's
# apps/gateway/bin/mediagate.js. The bin dir is $MEDIAGATE_BIN_DIR, else /usr/local/bin as
# root, else ~/.local/bin. A `mediagate` there that is not a link to a mediagate clone is left
# alone (with a note); a link to another clone is moved to this one.
set -euo pipefail
cd "$(dirname "$0")/.."
target=$PWD/apps/gateway/bin/mediagate.js
if [ -n "${MEDIAGATE_BIN_DIR:-}" ]; then
  dir=$MEDIAGATE_BIN_DIR
elif [ "$(id -u)" = 0 ]; then
  dir=/usr/local/bin
else
  dir=$HOME/.local/bin
fi
link=$dir/mediagate

if [ -L "$link" ] && [ "$(readlink "$link")" = "$target" ]; then
  echo "link-bin: $link -> $target"
elif [ -e "$link" ] && ! { [ -L "$link" ] && [[ "$(readlink "$link")" == */apps/gateway/bin/mediagate.js ]]; }; then
  echo "link-bin: $link exists and is not a mediagate link; left alone (run $target, or pnpm mediagate)"
  exit 0
else
  mkdir -p "$dir"
  ln -sfn "$target" "$link"
  echo "link-bin: linked $link -> $target"
fi
case ":$PATH:" in
  *":$dir:"*) ;;
  *) echo "link-bin: $dir is not on PATH; add it (export PATH=\"$dir:\$PATH\") to call mediagate by name" ;;
esac
