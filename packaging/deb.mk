# SPDX-License-Identifier: BSD-2-Clause
# packaging/deb.mk - make deb: the tools as a Debian package, build/sqvm-tools_VERSION_ARCH.deb,
# included by the top Makefile. The files are make install's lists (TOOLS_BIN, TOOLS_MAN,
# TOOLS_BPFTRACE); packaging/mkdeb.sh lays them out as Debian does and runs dpkg-deb;
# packaging/README.md says what goes where and why. The version is the one the tools print
# (SQTOOLS_VERSION in tools/sqopts.h).

DEB_VERSION := $(shell sed -n 's/^\#define SQTOOLS_VERSION "\(.*\)"$$/\1/p' tools/sqopts.h)
DEB_ARCH := $(shell dpkg --print-architecture 2>/dev/null)
DEB_FILE := build/sqvm-tools_$(DEB_VERSION)_$(DEB_ARCH).deb

.PHONY: deb
deb: $(DEB_FILE)

# Only the release build's tools are packaged (SANITIZE=1 puts others in TOOLS_BIN).
$(DEB_FILE): $(TOOLS_BIN) $(TOOLS_MAN) $(TOOLS_BPFTRACE) LICENSE tools/sqopts.h \
             $(wildcard packaging/*.sh packaging/*.mk packaging/sqstat.* packaging/debian/*)
	@test "$(TOOLS_DIR)" = build/tools || { echo "make deb: the release build only (not SANITIZE=1)" >&2; exit 1; }
	DEB_TOOLS="$(TOOLS_BIN)" DEB_MAN="$(TOOLS_MAN)" DEB_BPFTRACE="$(TOOLS_BPFTRACE)" \
		packaging/mkdeb.sh $(DEB_VERSION) build/deb $@
