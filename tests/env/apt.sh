# shellcheck shell=bash
# tests/env/apt.sh -- sourced by the scripts that install what they need
# from Debian's archive (tests/env/deps.sh, tests/env/rdkafka.sh,
# tests/bench/deps.sh).
#
#   apt_ensure WHO PACKAGE...   installs those of the packages dpkg does
#                               not list as installed: one apt-get update,
#                               one apt-get install, through sudo when not
#                               root; says so on stderr, prefixed WHO.
#                               Nothing runs when all are there.

apt_ensure() {
	local who=$1 p status
	local -a missing=() sudo=()
	shift
	for p in "$@"; do
		status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
		[[ $status == installed ]] || missing+=("$p")
	done
	((${#missing[@]} > 0)) || return 0
	[[ $EUID -eq 0 ]] || sudo=(sudo)
	echo "$who: installing ${missing[*]}" >&2
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get update -q >&2 &&
		DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q \
			--no-install-recommends "${missing[@]}" >&2
}
