#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# packaging/mkdeb.sh - lays out the sqvm-tools package in a staging root and builds it with
# dpkg-deb; run by make deb (packaging/deb.mk), which passes make install's lists:
#
#   DEB_TOOLS="build/tools/sqalloc ..." DEB_MAN="tools/sqalloc.8 ..." \
#   DEB_BPFTRACE="bpftrace/gclatency.bt ..." packaging/mkdeb.sh VERSION STAGING OUT.deb
#
# The layout is Debian's for tools like these (packaging/README.md): the tools in
# /usr/sbin (as libbpf-tools and bpfcc-tools have theirs: they need root, their manual
# pages are in section 8), stripped; the manual pages gzipped; the bpftrace scripts in
# /usr/share/sqvm-tools/bpftrace; copyright and changelog in /usr/share/doc/sqvm-tools;
# the unit in /lib/systemd/system (bookworm's debhelper puts units there); its options
# in /etc/default/sqstat, a conffile. Depends: is dpkg-shlibdeps's answer for the
# binaries (dpkg-dev, which build-essential brings). Reproducible: every time stamp is
# the changelog's, gzip -n stores none, files are in sorted order.
set -eu
[ $# = 3 ] || { echo "usage: packaging/mkdeb.sh VERSION STAGING OUT.deb" >&2; exit 2; }
version=$1 stage=$2 out=$3
case $stage in "" | / | /*/..*) echo "packaging/mkdeb.sh: '$stage' is no staging directory" >&2; exit 2 ;; esac
here=$(dirname "$0")
deb=$here/debian
pkg=sqvm-tools
root=$stage/debian/$pkg	# where dpkg-shlibdeps expects a package's files
doc=$root/usr/share/doc/$pkg

# The changelog's version is the tools' (SQTOOLS_VERSION): one is not bumped without the other.
logged=$(dpkg-parsechangelog -l "$deb/changelog" -S Version)
[ "$logged" = "$version" ] || {
	echo "packaging/mkdeb.sh: $deb/changelog is at $logged, the tools (SQTOOLS_VERSION) at $version" >&2
	exit 1
}
SOURCE_DATE_EPOCH=$(dpkg-parsechangelog -l "$deb/changelog" -S Timestamp)
export SOURCE_DATE_EPOCH

rm -rf "$stage"
install -d -m 755 "$root/DEBIAN" "$root/usr/sbin" "$root/usr/share/man/man8" \
	"$root/usr/share/$pkg/bpftrace" "$doc" "$root/lib/systemd/system" "$root/etc/default"

# shellcheck disable=SC2086  # the lists are make's, space-separated
install -m 755 $DEB_TOOLS "$root/usr/sbin/"
# as dh_strip strips an executable: the debug information and the comment notes go
strip --remove-section=.comment --remove-section=.note "$root"/usr/sbin/*
# shellcheck disable=SC2086
install -m 644 $DEB_MAN "$root/usr/share/man/man8/"
gzip -9n "$root"/usr/share/man/man8/*
for f in $DEB_BPFTRACE; do	# the scripts run as they are (#!/usr/bin/env bpftrace), the notes do not
	case "$f" in *.bt) mode=755 ;; *) mode=644 ;; esac
	install -m "$mode" "$f" "$root/usr/share/$pkg/bpftrace/"
done

# copyright in Debian's machine-readable format, its license the tree's LICENSE, as a
# field's continuation lines (a blank line is " .")
{ cat "$deb/copyright.in"; sed -e 's/^$/./' -e 's/^/ /' "$here/../LICENSE"; } >"$doc/copyright"
gzip -9nc "$deb/changelog" >"$doc/changelog.gz"
chmod 644 "$doc/copyright" "$doc/changelog.gz"
install -m 644 "$here/sqstat.service" "$root/lib/systemd/system/sqstat.service"
install -m 644 "$here/sqstat.default" "$root/etc/default/sqstat"

# Depends: the packages of the libraries the tools link (libbpf1, libelf1, zlib1g, libc6),
# at the versions whose symbols they use. dpkg-shlibdeps reads debian/control: a minimal
# one beside the staging root.
printf 'Source: sqvm\n\nPackage: %s\nArchitecture: any\n' "$pkg" >"$stage/debian/control"
depends=$(cd "$stage" && dpkg-shlibdeps -O "debian/$pkg"/usr/sbin/*) || exit 1
depends=${depends#shlibs:Depends=}

for f in postinst prerm postrm; do install -m 755 "$deb/$f" "$root/DEBIAN/$f"; done
install -m 644 "$deb/conffiles" "$root/DEBIAN/conffiles"
# md5sums of every file but the conffiles (dpkg keeps theirs), as dh_md5sums writes them
(cd "$root" && find . -type f ! -path './DEBIAN/*' ! -path './etc/*' -printf '%P\n' | LC_ALL=C sort |
	xargs md5sum) >"$root/DEBIAN/md5sums"
chmod 644 "$root/DEBIAN/md5sums"
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$(dpkg --print-architecture)/" \
	-e "s/@INSTALLED_SIZE@/$size/" -e "s/@DEPENDS@/$depends/" "$deb/control.in" >"$root/DEBIAN/control"
chmod 644 "$root/DEBIAN/control"

find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
dpkg-deb --root-owner-group -Zxz --build "$root" "$out" >/dev/null
echo "packaging/mkdeb.sh: $out (Depends: $depends)"
