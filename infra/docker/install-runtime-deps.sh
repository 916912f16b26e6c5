#!/bin/sh
# Installs the production dependencies of every package the image ships, from the pnpm store filled by the full
# install (offline): each package's node_modules links and the root's .pnpm tree, nothing of the packages
# packages.txt marks `local` or `static`. Run in the build stage after removing the full install's links;
# infra/deployment.test.ts runs it on a scratch copy of the manifests and checks what it installs.
#   install-runtime-deps.sh STORE_DIR
set -eu
store="${1:?usage: install-runtime-deps.sh STORE_DIR}"
here="$(cd "$(dirname "$0")" && pwd)"
set --
while read -r dir how _; do
  case "$dir" in '' | '#'*) continue ;; esac
  case "$how" in local | static) set -- "$@" "--filter=!./$dir" ;; esac
done < "$here/packages.txt"
CI=true pnpm install --frozen-lockfile --prod --offline --store-dir "$store" "$@"
