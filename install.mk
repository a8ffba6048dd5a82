# install.mk - `make install` and `make uninstall` (included by the Makefile).
#
# Everything goes under $(DESTDIR); the directories are variables so that
# a distribution can place them (debian/rules sets LIBDIR to the multiarch
# one).  The units name $(SBINDIR)/vmbuildd and $(SBINDIR)/hvsim, and the
# example configs $(PKGLIBDIR)/hello.elf, whatever PREFIX is.
DESTDIR	?=
PREFIX	?= /usr
BINDIR	?= $(PREFIX)/bin
SBINDIR	?= $(PREFIX)/sbin
LIBDIR	?= $(PREFIX)/lib
PKGLIBDIR ?= $(PREFIX)/lib/vmbuild
LIBEXECDIR ?= $(PREFIX)/libexec/vmbuild
INCLUDEDIR ?= $(PREFIX)/include
DATADIR	?= $(PREFIX)/share
MANDIR	?= $(DATADIR)/man
DOCDIR	?= $(DATADIR)/doc/vmbuild
SYSCONFDIR ?= /etc
# systemd's own directories (Debian 12: systemd.pc's systemdsystemunitdir).
UNITDIR	?= /lib/systemd/system
SYSUSERSDIR ?= /usr/lib/sysusers.d
TMPFILESDIR ?= /usr/lib/tmpfiles.d
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
# Where Debian's python3 and Ansible look without configuration.
PYTHONDIR ?= $(PREFIX)/lib/python3/dist-packages
ANSIBLEDIR ?= $(DATADIR)/ansible/collections/ansible_collections/vmbuild/xen

INSTALL	?= install
SED_PATHS = sed -e 's|/usr/sbin/vmbuildd|$(SBINDIR)/vmbuildd|g' \
		-e 's|/usr/sbin/hvsim|$(SBINDIR)/hvsim|g' \
		-e 's|/usr/libexec/vmbuild/|$(LIBEXECDIR)/|g' \
		-e 's|"\.\./build/guest/hello\.elf"|"$(PKGLIBDIR)/hello.elf"|'

PY_FILES := $(wildcard clients/python/vmbuild/*.py)
# The Ansible collection vmbuild.xen, as ansible-galaxy would install it
# (its tests/ stays in the source tree).
ANSIBLE_FILES := $(filter-out contrib/ansible/tests/%,$(shell find contrib/ansible -type f -not -name '*.tar.gz'))
EXAMPLES := $(wildcard configs/*.cfg) systemd/vmbuildd-devices.conf
PROM_RULES := $(wildcard contrib/prometheus/*.rules.yml)

# The archives are static: a program links what libvmbuild links, the
# libraries of $(LIBVMB_LDLIBS) less the build tree's own archives.
VMB_PC_LIBS = $(strip $(filter-out $(LIB)/%,$(LIBVMB_LDLIBS)))
# The public header and the files it includes with "..." (they sit
# beside it in libvmbuild/).
VMB_HEADERS = libvmbuild/vmbuild.h $(addprefix libvmbuild/,$(shell \
	sed -n 's/^\#include "\([^"]*\)".*/\1/p' libvmbuild/vmbuild.h))
VMB_PC_VERSION = $(VERSION)

.PHONY: install uninstall install-bin install-data install-dev install-python
install: install-bin install-data install-dev install-python

install-bin: build-all
	$(INSTALL) -D -m 0755 $(BIN)/vmbuildd $(DESTDIR)$(SBINDIR)/vmbuildd
	$(INSTALL) -D -m 0755 $(BIN)/hvsim $(DESTDIR)$(SBINDIR)/hvsim
	$(INSTALL) -D -m 0755 $(BIN)/vmctl $(DESTDIR)$(BINDIR)/vmctl
	$(INSTALL) -D -m 0755 $(BIN)/vmb-config-check $(DESTDIR)$(BINDIR)/vmb-config-check
	$(INSTALL) -D -m 0644 $(GUEST_ELF) $(DESTDIR)$(PKGLIBDIR)/hello.elf
	# Its vmctl is the one in PATH (the unit's, /usr/bin's).
	$(INSTALL) -D -m 0755 scripts/vmbuild-guests $(DESTDIR)$(LIBEXECDIR)/vmbuild-guests

install-data: build-all
	for p in $(MAN_PAGES); do \
		s=$${p##*.}; \
		$(INSTALL) -D -m 0644 $$p $(DESTDIR)$(MANDIR)/man$$s/$${p##*/} || exit; \
	done
	$(INSTALL) -d $(DESTDIR)$(UNITDIR)
	for u in vmbuildd.service vmbuildd.socket vmbuildd-ro.socket hvsim.service \
	    vmbuild-guests.service; do \
		$(SED_PATHS) systemd/$$u >$(DESTDIR)$(UNITDIR)/$$u && \
		chmod 0644 $(DESTDIR)$(UNITDIR)/$$u || exit; \
	done
	$(INSTALL) -D -m 0644 systemd/vmbuild.sysusers $(DESTDIR)$(SYSUSERSDIR)/vmbuild.conf
	$(INSTALL) -D -m 0644 systemd/vmbuild.tmpfiles $(DESTDIR)$(TMPFILESDIR)/vmbuild.conf
	# Configuration: an administrator's copy is kept.
	[ -e $(DESTDIR)$(SYSCONFDIR)/default/hvsim ] || \
		$(INSTALL) -D -m 0644 systemd/hvsim.default $(DESTDIR)$(SYSCONFDIR)/default/hvsim
	[ -e $(DESTDIR)$(SYSCONFDIR)/default/vmbuild ] || \
		$(INSTALL) -D -m 0644 systemd/vmbuild.default $(DESTDIR)$(SYSCONFDIR)/default/vmbuild
	# vmbuild-guests' AUTOSTART_DIR, as /etc/xen/auto.
	$(INSTALL) -d $(DESTDIR)$(SYSCONFDIR)/vmbuild/auto
	$(INSTALL) -D -m 0644 cli/vmctl.bash-completion $(DESTDIR)$(BASHCOMPDIR)/vmctl
	$(INSTALL) -d $(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(DATADIR)/vmbuild/prometheus
	for f in $(EXAMPLES); do \
		$(SED_PATHS) $$f >$(DESTDIR)$(DOCDIR)/examples/$${f##*/} && \
		chmod 0644 $(DESTDIR)$(DOCDIR)/examples/$${f##*/} || exit; \
	done
	$(INSTALL) -m 0644 $(PROM_RULES) $(DESTDIR)$(DATADIR)/vmbuild/prometheus/

# libvmbuild for other programs: header, archives, pkg-config file
# (pkg-config --cflags --libs vmbuild).
install-dev: build-all
	@mkdir -p $(B)
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(LIBDIR)' \
	    'includedir=$(INCLUDEDIR)/vmbuild' '' \
	    'Name: vmbuild' \
	    'Description: libvmbuild, the domain-building library of vmbuild (static)' \
	    'Version: $(VMB_PC_VERSION)' \
	    'Cflags: -I$${includedir}' \
	    'Libs: -L$${libdir} -lvmbuild -lhvclient $(VMB_PC_LIBS)' >$(B)/vmbuild.pc
	$(INSTALL) -d $(DESTDIR)$(INCLUDEDIR)/vmbuild
	$(INSTALL) -m 0644 $(VMB_HEADERS) $(DESTDIR)$(INCLUDEDIR)/vmbuild/
	$(INSTALL) -D -m 0644 $(LIBVMB_LIB) $(DESTDIR)$(LIBDIR)/libvmbuild.a
	$(INSTALL) -D -m 0644 $(HVCLIENT_LIB) $(DESTDIR)$(LIBDIR)/libhvclient.a
	$(INSTALL) -D -m 0644 $(B)/vmbuild.pc $(DESTDIR)$(LIBDIR)/pkgconfig/vmbuild.pc

# The Python client (standard library only) and the Ansible collection
# that uses it.  `pip install clients/python` and `ansible-galaxy
# collection install` of a built collection are the other ways.
install-python:
	$(INSTALL) -d $(DESTDIR)$(PYTHONDIR)/vmbuild
	$(INSTALL) -m 0644 $(PY_FILES) $(DESTDIR)$(PYTHONDIR)/vmbuild/
	for f in $(ANSIBLE_FILES); do \
		$(INSTALL) -D -m 0644 $$f $(DESTDIR)$(ANSIBLEDIR)/$${f#contrib/ansible/} || exit; \
	done

uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/vmbuildd $(DESTDIR)$(SBINDIR)/hvsim \
	    $(DESTDIR)$(BINDIR)/vmctl $(DESTDIR)$(BINDIR)/vmb-config-check \
	    $(DESTDIR)$(PKGLIBDIR)/hello.elf $(DESTDIR)$(LIBEXECDIR)/vmbuild-guests
	for p in $(MAN_PAGES); do rm -f $(DESTDIR)$(MANDIR)/man$${p##*.}/$${p##*/}; done
	rm -f $(DESTDIR)$(UNITDIR)/vmbuildd.service \
	    $(DESTDIR)$(UNITDIR)/vmbuildd.socket $(DESTDIR)$(UNITDIR)/vmbuildd-ro.socket \
	    $(DESTDIR)$(UNITDIR)/hvsim.service $(DESTDIR)$(UNITDIR)/vmbuild-guests.service \
	    $(DESTDIR)$(SYSUSERSDIR)/vmbuild.conf $(DESTDIR)$(TMPFILESDIR)/vmbuild.conf \
	    $(DESTDIR)$(BASHCOMPDIR)/vmctl
	rm -rf $(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(DATADIR)/vmbuild \
	    $(DESTDIR)$(INCLUDEDIR)/vmbuild $(DESTDIR)$(PYTHONDIR)/vmbuild \
	    $(DESTDIR)$(ANSIBLEDIR)
	rm -f $(DESTDIR)$(LIBDIR)/libvmbuild.a $(DESTDIR)$(LIBDIR)/libhvclient.a \
	    $(DESTDIR)$(LIBDIR)/pkgconfig/vmbuild.pc
	rmdir $(DESTDIR)$(PKGLIBDIR) $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(DOCDIR) 2>/dev/null || true
	@echo "uninstall: $(SYSCONFDIR)/default/hvsim, $(SYSCONFDIR)/default/vmbuild and" \
	    "$(SYSCONFDIR)/vmbuild/auto are configuration and stay"
