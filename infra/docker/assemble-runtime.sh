#!/bin/sh
# Copies what the fleet needs at run time out of a built, production-pruned workspace SRC into OUT, laid out as a
# root file system: OUT/app (node_modules, every libs/* and services/* package.json + dist + its node_modules
# symlinks, prisma/migrations) and OUT/usr/local/bin/gensvc. Sources, tests and dev tooling stay behind, and so do
# the packages infra/docker/packages.txt marks `local`; a `static` one ships its dist/ alone.
# Every other package is taken, so a new service under services/ ships without editing the Dockerfile.
# `cp -a` keeps pnpm's relative symlinks, which resolve again because the layout under /app is unchanged.
set -eu

src="${1:?usage: assemble-runtime.sh SRC OUT}"
out="${2:?usage: assemble-runtime.sh SRC OUT}"
app="$out/app"

mkdir -p "$app/prisma" "$out/usr/local/bin"
cd "$src"
# How packages.txt ships a package: local, static, or (not listed) whole.
how() {
  [ -f infra/docker/packages.txt ] || return 0
  awk -v dir="$1" '$1 == dir { print $2 }' infra/docker/packages.txt
}
cp -a package.json pnpm-workspace.yaml node_modules "$app/"
for pkg in libs/* services/*; do
  [ -f "$pkg/package.json" ] || continue
  case "$(how "$pkg")" in
    local) continue ;;
    static) parts=dist ;;
    *) parts="dist node_modules" ;;
  esac
  mkdir -p "$app/$pkg"
  cp -a "$pkg/package.json" "$app/$pkg/"
  if [ -f "$pkg/node-flags" ]; then cp -a "$pkg/node-flags" "$app/$pkg/"; fi
  for part in $parts; do
    if [ -e "$pkg/$part" ]; then cp -a "$pkg/$part" "$app/$pkg/"; fi
  done
done
# libs/db resolves its migrations as ../../../prisma/migrations from its dist/ (MIGRATIONS_DIR).
cp -a prisma/migrations "$app/prisma/"
cp infra/docker/gensvc.sh "$out/usr/local/bin/gensvc"
chmod 0755 "$out/usr/local/bin/gensvc"
