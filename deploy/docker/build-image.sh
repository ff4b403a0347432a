#!/usr/bin/env bash
# deploy/docker/build-image.sh -- `make image`: builds deploy/docker/
# Dockerfile with buildah (vfs storage, chroot isolation: no daemon, no
# user namespaces, works as root in a container) on a Debian 12 base image
# made here, since no container registry may be reachable:
#
#   1. the base: debootstrap --variant=minbase bookworm from the Debian
#      mirror this machine's apt uses, trimmed like a slim image (no
#      documentation, man pages or locales; apt without recommends),
#      imported with `buildah from scratch`, a copy of the tree and
#      `buildah commit`. Cached in the image store under a tag keyed by
#      this recipe, the architecture, the mirror and the ISO week: a new
#      machine, a changed recipe or a week's worth of Debian updates
#      builds it again.
#   2. the relay: `buildah bud --build-arg BASE=<that base>`.
#
# Prints the image's name and size on the last line:
#   image localhost/outbox-relay:dev 95.3 MB
#
# Exit status: 0 built; 1 the build failed; 2 this machine cannot build
# images at all (not root, buildah or debootstrap missing, no apt source,
# Debian's archive unreachable, buildah's storage or chroot isolation or
# debootstrap refused by the kernel or the container it runs in): the
# last line on stderr says which, so t610 can skip with that reason
# instead of failing.
#
# Knobs: IMAGE_NAME (localhost/outbox-relay:dev), IMAGE_STORE
# (/var/tmp/outbox-relay-image: buildah's storage and the base cache),
# IMAGE_BASE (use this base image instead of bootstrapping one; then it
# must be in the store or pullable), DEBIAN_MIRROR (the archive to
# bootstrap and install from; default the one apt uses here). Needs root
# (debootstrap, chroot).
set -euo pipefail

cd "$(dirname "$0")/../.."

IMAGE_NAME=${IMAGE_NAME:-localhost/outbox-relay:dev}
IMAGE_STORE=${IMAGE_STORE:-/var/tmp/outbox-relay-image}
SUITE=bookworm

say() { printf '[image] %s\n' "$*" >&2; }
die() {
	say "$*"
	exit 1
}
cannot() { # this machine cannot build images: exit 2
	say "cannot build here: $*"
	exit 2
}

[[ $EUID -eq 0 ]] || cannot "needs root (debootstrap and buildah's chroot isolation)"
for tool in buildah debootstrap curl; do
	command -v "$tool" >/dev/null 2>&1 || cannot "$tool is missing (make deps installs it)"
done

mkdir -p "$IMAGE_STORE" || cannot "cannot create $IMAGE_STORE"
# A store of our own: nothing else on the machine sees these images, and
# removing the directory removes them all.
bah() {
	buildah --root "$IMAGE_STORE/storage" --runroot "$IMAGE_STORE/run" \
		--storage-driver vfs "$@"
}
export BUILDAH_ISOLATION=chroot

# One build at a time per store (two would share the base's work tree).
exec 9>"$IMAGE_STORE/lock"
if ! flock -w 1800 9; then
	die "another build holds $IMAGE_STORE/lock for 30 min"
fi

# The mirror apt uses here, for bookworm and for its security updates:
# from deb822 .sources files (URIs: + Suites:) or one-line sources.list
# entries. Nothing is written down: whatever this machine reaches works.
apt_mirror() {
	local suite=$1 f
	for f in /etc/apt/sources.list.d/*.sources; do
		[[ -f $f ]] || continue
		awk -v want="$suite" '
			/^[[:space:]]*$/ { if (uri != "" && hit) { print uri; exit } uri = ""; hit = 0; next }
			$1 == "URIs:" { uri = $2 }
			$1 == "Suites:" { for (i = 2; i <= NF; i++) if ($i == want) hit = 1 }
			END { if (uri != "" && hit) print uri }
		' "$f" | head -n1
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[[ -f $f ]] || continue
		awk -v want="$suite" '$1 == "deb" && $3 == want { print $2; exit }' "$f"
	done
}

# The trimming a slim image has, in files of the base's own.
slim_dpkg_cfg() {
	cat <<-'EOF'
	# outbox-relay base image: no documentation, manuals or translations
	# (copyright files stay).
	path-exclude=/usr/share/doc/*
	path-include=/usr/share/doc/*/copyright
	path-exclude=/usr/share/man/*
	path-exclude=/usr/share/info/*
	path-exclude=/usr/share/locale/*
	path-exclude=/usr/share/lintian/*
	EOF
}
slim_apt_cfg() {
	cat <<-'EOF'
	// outbox-relay base image: what is asked for and nothing else, no
	// translated package descriptions, no package cache left behind.
	APT::Install-Recommends "false";
	APT::Install-Suggests "false";
	Acquire::Languages "none";
	DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };
	EOF
}

# Both stages install packages from the archive apt uses here (and a new
# base is bootstrapped from it): without it nothing can be built.
mirror=${DEBIAN_MIRROR:-$(apt_mirror "$SUITE" | sed -n 1p)}
[[ -n $mirror ]] || cannot "no apt source for $SUITE found in /etc/apt (set DEBIAN_MIRROR)"
if ! curl -fsS -o /dev/null -m 20 --retry 2 "${mirror%/}/dists/$SUITE/Release" 2>"$IMAGE_STORE/probe.log"; then
	cannot "Debian's archive at $mirror is unreachable ($(head -c 200 "$IMAGE_STORE/probe.log"))"
fi
# buildah's storage: a working container can be made in it.
if ! probe=$(bah from scratch 2>"$IMAGE_STORE/probe.log"); then
	cannot "buildah cannot use its storage in $IMAGE_STORE ($(tail -n1 "$IMAGE_STORE/probe.log"))"
fi
bah rm "$probe" >/dev/null 2>&1 || true

arch=$(dpkg --print-architecture)
week=$(date -u +%G-w%V)
recipe=$(
	# The base's apt sources name the mirror: another mirror, another base.
	echo "debootstrap --variant=minbase $SUITE $arch $mirror"
	slim_dpkg_cfg
	slim_apt_cfg
	sed -n '/^make_base()/,/^}/p' "$0"
)
key=$(printf '%s\n%s\n' "$recipe" "$week" | sha256sum | cut -c1-12)
base=${IMAGE_BASE:-localhost/outbox-relay-base:$SUITE-$key}

make_base() {
	local root=$IMAGE_STORE/rootfs-$key security ctr t0=$SECONDS
	security=$(apt_mirror "$SUITE-security" | sed -n 1p)
	rm -rf "$root"
	say "bootstrapping $SUITE ($arch, minbase) into $root"
	if ! debootstrap --variant=minbase --arch="$arch" "$SUITE" "$root" "$mirror" \
		>"$IMAGE_STORE/debootstrap.log" 2>&1; then
		# The archive answered above: what fails here is the machine
		# (mknod, mount or chroot refused inside a container).
		tail -n 30 "$IMAGE_STORE/debootstrap.log" >&2
		rm -rf "$root"
		cannot "debootstrap failed (log: $IMAGE_STORE/debootstrap.log)"
	fi
	slim_dpkg_cfg >"$root/etc/dpkg/dpkg.cfg.d/90-outbox-relay-slim"
	slim_apt_cfg >"$root/etc/apt/apt.conf.d/90-outbox-relay-slim"
	# The same suites as the official image: the release, its updates
	# and its security updates.
	rm -f "$root/etc/apt/sources.list"
	{
		printf 'Types: deb\nURIs: %s\nSuites: %s %s-updates\nComponents: main\n' \
			"$mirror" "$SUITE" "$SUITE"
		printf 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n'
		if [[ -n $security ]]; then
			printf '\nTypes: deb\nURIs: %s\nSuites: %s-security\nComponents: main\n' \
				"$security" "$SUITE"
			printf 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n'
		fi
	} >"$root/etc/apt/sources.list.d/debian.sources"
	# What debootstrap left that an image does not need: its own logs,
	# the package cache and lists, the documentation installed before the
	# exclusions above, device nodes (the runtime provides /dev).
	rm -rf "$root"/debootstrap "$root"/var/cache/apt/archives/*.deb \
		"$root"/var/cache/apt/*.bin "$root"/var/lib/apt/lists/* \
		"$root"/var/log/* "$root"/dev/* "$root"/tmp/* \
		"$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/*
	find "$root/usr/share/doc" -mindepth 2 ! -name copyright -delete 2>/dev/null || true
	: >"$root/etc/machine-id"
	ctr=$(bah from --name "outbox-relay-base-$key" scratch)
	tar -C "$root" --numeric-owner -cf "$IMAGE_STORE/rootfs-$key.tar" .
	bah add "$ctr" "$IMAGE_STORE/rootfs-$key.tar" / >/dev/null
	bah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		--cmd /bin/bash --os linux --arch "$arch" \
		--label "org.opencontainers.image.description=Debian $SUITE minbase (debootstrap), for outbox-relay builds" \
		"$ctr"
	bah commit --rm "$ctr" "$base" >/dev/null
	rm -rf "$root" "$IMAGE_STORE/rootfs-$key.tar"
	say "base $base made in $((SECONDS - t0)) s"
}

if [[ -z ${IMAGE_BASE:-} ]]; then
	if bah inspect --type image "$base" >/dev/null 2>&1; then
		say "base $base (cached)"
	else
		# Older bases of this recipe are superseded: drop them.
		for old in $(bah images --format '{{.Name}}:{{.Tag}}' 2>/dev/null |
			grep '^localhost/outbox-relay-base:' || true); do
			bah rmi "$old" >/dev/null 2>&1 || true
		done
		make_base
	fi
fi

# buildah run with chroot isolation on the base: every RUN of the
# Dockerfile needs it, and some containers refuse its mounts.
if probe=$(bah from --pull-never "$base" 2>"$IMAGE_STORE/probe.log"); then
	if ! bah run --isolation chroot "$probe" -- true >>"$IMAGE_STORE/probe.log" 2>&1; then
		bah rm "$probe" >/dev/null 2>&1 || true
		cannot "buildah run (chroot isolation) does not work here ($(tail -n1 "$IMAGE_STORE/probe.log"))"
	fi
	bah rm "$probe" >/dev/null 2>&1 || true
else
	die "base image $base: $(tail -n1 "$IMAGE_STORE/probe.log")"
fi

t0=$SECONDS
say "building $IMAGE_NAME on $base"
bah bud --isolation chroot --pull-never --layers=false \
	--build-arg BASE="$base" -f deploy/docker/Dockerfile -t "$IMAGE_NAME" . >&2
say "built in $((SECONDS - t0)) s"
# Dangling images from earlier builds of the same name.
bah rmi --prune >/dev/null 2>&1 || true
size=$(bah images --format "{{.Size}}" "$IMAGE_NAME" | sed -n 1p)
echo "image $IMAGE_NAME $size"
