# tests/ops/build.mk - what an operator meets: the Makefile's flags and
# install, man pages, bash completion, the systemd units and their
# sandbox, the Python client, the Ansible module, the Prometheus rules and
# a real Prometheus scraping vmbuildd, ansible-test sanity over the
# Ansible collection, and the Debian packages (built in a
# throwaway copy, checked by lintian).  deb.sh goes last: it is the
# longest.
OPS_TESTS := tests/ops/flags.sh tests/ops/version.sh tests/ops/man.sh \
	tests/ops/newcomer.sh \
	tests/ops/install.sh \
	tests/ops/units.py tests/ops/completion.py tests/ops/python-client.py \
	tests/ops/ansible.sh tests/ops/ansible-sanity.sh \
	tests/ops/prometheus-rules.sh \
	tests/ops/prometheus.py tests/ops/deb.sh
TESTS += $(OPS_TESTS)
# Not in a sanitizer's suite: they check the build itself (its flags,
# version, install, packages), which a sanitizer variant's make would
# hand its own CFLAGS through MAKEFLAGS, and the production binary's
# system calls against the unit's filter, which the sanitizer's runtime
# adds to.  The ones that drive the daemon (client, Ansible, Prometheus)
# stay.
OPS_SAN_SKIP := tests/ops/flags.sh tests/ops/version.sh tests/ops/install.sh \
	tests/ops/units.py tests/ops/deb.sh tests/ops/ansible-sanity.sh
TESTS_DEPS += $(BIN)/vmbuildd $(BIN)/hvsim $(BIN)/vmctl $(B)/guest/hello.elf \
	$(MAN_PAGES)
