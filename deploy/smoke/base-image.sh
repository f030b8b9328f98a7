#!/usr/bin/env bash
# Builds the smoke test's base image from Debian's packages alone, for a machine where no
# image registry can be reached: debootstrap a minimal bookworm root file system with the
# few packages the images need (the three of compose.yaml, and HAProxy's and PostgreSQL's
# of compose.shards.yaml), add the users the Dockerfiles expect, and
# `docker import` it. Prints the image's tag on stdout (progress goes to stderr).
#
# The tag is a hash of this script, so a second run finds the image and returns at once;
# change the package list (or anything here) and the next run builds a new one.
#
#   usage: deploy/smoke/base-image.sh [single|shards]   (needs root and a running Docker
#          engine; the mode is deploy/smoke.sh's: `single` leaves out the shards' HAProxy
#          and PostgreSQL packages, a third of the download; default shards, everything)
#   DEBIAN_MIRROR  the mirror debootstrap reads (default: the first deb.debian.org-style
#                  URI of /etc/apt/sources{.list,.list.d}, else http://deb.debian.org/debian)
#
# What is in it, and for whom:
#   minbase (libc6, libgcc-s1, coreutils, passwd, ...)  all of them: the binaries are
#                  dynamically linked against glibc; the AI entrypoint needs a shell
#   ca-certificates  the server (as in distroless cc-debian12)
#   caddy, wget      the proxy (Debian's caddy; wget for its health check)
#   haproxy, socat   (shards only) wizard_haproxy (Dockerfile.haproxy: HAProxy 2.6, socat for its
#                  runtime API)
#   postgresql-15    (shards only) postgres (Dockerfile.postgres; the package's postinst creates a
#                  cluster "main", which that Dockerfile removes: it initialises its own
#                  in the volume). debootstrap starts no service while it installs.
#   user nonroot 65532  the server's image runs as nonroot:nonroot (distroless's user)
set -euo pipefail

SUITE=bookworm
MODE=${1:-shards}
case "$MODE" in
single) PACKAGES=ca-certificates,caddy,wget ;;
shards) PACKAGES=ca-certificates,caddy,wget,haproxy,socat,postgresql-15 ;;
*)
	echo "usage: deploy/smoke/base-image.sh [single|shards]" >&2
	exit 2
	;;
esac
REPO=wizard-smoke-base

log() { printf 'base-image: %s\n' "$*" >&2; }
fail() {
	printf 'base-image: FAIL: %s\n' "$*" >&2
	exit 1
}

tag="$REPO:$SUITE-$MODE-$(sha256sum "$0" | cut -c1-12)"
if docker image inspect "$tag" >/dev/null 2>&1; then
	log "cached: $tag"
	echo "$tag"
	exit 0
fi

[ "$(id -u)" = 0 ] || fail "debootstrap needs root"
if ! command -v debootstrap >/dev/null; then
	log "installing Debian's debootstrap"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null 2>&1 ||
		{ apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null 2>&1; } ||
		fail "apt-get install debootstrap"
fi

mirror=${DEBIAN_MIRROR:-}
if [ -z "$mirror" ]; then
	mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list 2>/dev/null |
		grep -oE 'https?://[^ ]+/debian/?( |$)' | grep -v security | head -1 | tr -d ' ' || true)
	mirror=${mirror:-http://deb.debian.org/debian}
fi

work=$(mktemp -d /var/tmp/wizard-smoke-base.XXXXXX)
trap 'rm -rf "$work"' EXIT
root="$work/rootfs"
log "debootstrap --variant=minbase --include=$PACKAGES $SUITE from $mirror (about a minute)"
if ! debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$root" "$mirror" >"$work/debootstrap.log" 2>&1; then
	tail -20 "$work/debootstrap.log" >&2
	fail "debootstrap failed (log above)"
fi

# distroless's user and group; the AI and proxy images add their own (10001) at build.
grep -q '^nonroot:' "$root/etc/group" || echo 'nonroot:x:65532:' >>"$root/etc/group"
grep -q '^nonroot:' "$root/etc/passwd" ||
	echo 'nonroot:x:65532:65532:nonroot:/home/nonroot:/usr/sbin/nologin' >>"$root/etc/passwd"
mkdir -p "$root/home/nonroot"
chown 65532:65532 "$root/home/nonroot"
# Nothing below is needed at run time: package caches and lists, documentation.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
	"$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/locale/* \
	"$root"/var/log/* "$root"/tmp/*
# The host's resolver would be baked in otherwise; Docker mounts its own.
: >"$root/etc/resolv.conf"

log "docker import as $tag"
tar -C "$root" --numeric-owner -c . |
	docker import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
		--change 'CMD ["/bin/bash"]' - "$tag" >/dev/null ||
	fail "docker import"
# Earlier versions of this mode's base image are of no further use.
for old in $(docker image ls --format '{{.Repository}}:{{.Tag}}' "$REPO"); do
	case "$old" in "$REPO:$SUITE-$MODE-"*) ;; *) continue ;; esac
	[ "$old" = "$tag" ] || docker image rm "$old" >/dev/null 2>&1 || true
done
echo "$tag"
