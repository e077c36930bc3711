# mcp-sandboxd — plain Makefile. `make` builds build/mcp-sandboxd;
# `make run` serves; `make test` runs every test (see README.md).

CC      ?= gcc
PREFIX  ?= /usr/local

# One switch for the sanitizer builds, each in a folder of its own:
#   make SANITIZER=address [target]    ASan + UBSan, build/asan
#   make SANITIZER=undefined [target]  UBSan alone, build/ubsan
#   make SANITIZER=thread [target]     TSan, build/tsan
# `make asan`, `make asan-unit` and `make tsan` are aliases.
SANITIZER ?=
ifneq ($(SANITIZER),)
ifeq ($(SANITIZER),address)
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all
B         := build/asan
else ifeq ($(SANITIZER),undefined)
SAN_FLAGS := -fsanitize=undefined -fno-sanitize-recover=all
B         := build/ubsan
else ifeq ($(SANITIZER),thread)
SAN_FLAGS := -fsanitize=thread
B         := build/tsan
else
$(error SANITIZER must be address, undefined or thread, not '$(SANITIZER)')
endif
CC      := clang
CFLAGS  := -O1 -fno-omit-frame-pointer $(SAN_FLAGS)
LDFLAGS += $(SAN_FLAGS)
endif
VERSION := 0.1.0

PKGS    := libcurl json-c libmicrohttpd nettle openssl yaml-0.1
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
        -Wold-style-definition -Wformat=2 -Wcast-qual -Wwrite-strings \
        -Wundef -Wpointer-arith -Wvla -Wnull-dereference -Wimplicit-fallthrough \
        -Wmissing-declarations -Wredundant-decls -Wswitch-enum  \
        -Werror=implicit-function-declaration -Werror=incompatible-pointer-types
ifeq ($(findstring clang,$(CC)),)
WARN += -Wformat-truncation=2
endif

BASE_CFLAGS := -std=gnu11 -g -pthread -D_GNU_SOURCE -DMCPSBX_VERSION='"$(VERSION)"' \
               -Isrc -Ibuild/gen $(WARN) $(PKG_CFLAGS)
CFLAGS  ?= -O2 -D_FORTIFY_SOURCE=2 -fstack-protector-strong
LDLIBS  := $(PKG_LIBS) -lwslay -pthread -lm

B       ?= build
# src/<layer>/[<backend>/]<module>.c: the folders are the layers (README.md).
# The programs (a main of their own) are not part of libcore.
PROGRAMS := src/main.c src/tools/tooldefs_check.c src/base/config_sample.c
SRCS    := $(filter-out $(PROGRAMS),$(wildcard src/*/*.c src/*/*/*.c))
GEN     := build/gen/runner_scripts.c
OBJS    := $(patsubst src/%.c,$(B)/obj/%.o,$(SRCS)) $(B)/obj/runner_scripts.o
# Tool definitions (src/tools/defs/*.json): checked by build/tooldefs-check,
# then embedded as tooldef_<file name> (src/tools/tooldef.h).
TOOL_DEFS     := $(sort $(wildcard src/tools/defs/*.json))
TOOL_DEFS_GEN := build/gen/tool_defs.c
OBJS          += $(B)/obj/tool_defs.o
# The sandbox's seccomp profile, in the Docker Engine's format, embedded
# as seccomp_profile_src (backend/docker/seccomp_profile.h).
SECCOMP       := src/backend/docker/seccomp_profile.json
SECCOMP_GEN   := build/gen/seccomp_profile_json.c
OBJS          += $(B)/obj/seccomp_profile_json.o
# The docker backend's sandbox I/O connector (backend/docker/channel.h).
CONNECTOR     := src/backend/docker/connect.pl
CONNECTOR_GEN := build/gen/channel_connect.c
OBJS          += $(B)/obj/channel_connect.o
# The docker backend's egress forwarder (backend/docker/egress_sock.h).
FORWARDER     := src/backend/docker/forward.pl
FORWARDER_GEN := build/gen/egress_forward.c
OBJS          += $(B)/obj/egress_forward.o
# The names a `variables` argument may not bind, per language
# (src/tools/variables/, made by scripts/variable-names.sh), embedded as
# variables_<language>_names (tools/variables.h).
VARIABLE_NAMES     := src/tools/variables/python.names src/tools/variables/javascript.names \
                      src/tools/variables/environment.names
VARIABLE_NAMES_GEN := build/gen/variable_names.c
OBJS               += $(B)/obj/variable_names.o
# The built-in languages (src/sandbox/languages/builtin.json), embedded as
# langtable_builtin_src (sandbox/languages/langtable.c), and the python and node
# runners' version probes (tools/languages.c).
LANGUAGES_JSON := src/sandbox/languages/builtin.json
PROBES        := src/tools/probes/python.py src/tools/probes/node.js
LANGUAGES_GEN := build/gen/languages_builtin.c
OBJS          += $(B)/obj/languages_builtin.o
# Every generated source, for builds outside this Makefile (scripts/fuzz.sh
# asks with `make -s gen-srcs`).
GEN_SRCS := $(GEN) $(TOOL_DEFS_GEN) $(SECCOMP_GEN) $(CONNECTOR_GEN) $(FORWARDER_GEN) $(VARIABLE_NAMES_GEN) \
            $(LANGUAGES_GEN)
# tests/unit mirrors src/: tests/unit/<layer>/[<folder>/]test_<module>.c
UNIT_SRCS := $(wildcard tests/unit/*/test_*.c tests/unit/*/*/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(B)/tests/%,$(UNIT_SRCS))

.PHONY: all run test deps images daemon-image unit runner-test conformance asan asan-unit tsan valgrind lint format format-check \
        fuzz fuzz-smoke integration faults load security clean install uninstall bench bench-compare config-sample \
        gen-srcs

all: $(B)/mcp-sandboxd $(B)/config-sample.ok

$(B)/mcp-sandboxd: $(B)/obj/main.o $(B)/libcore.a
	$(CC) $(CFLAGS) $(BASE_CFLAGS) -o $@ $^ $(LDFLAGS) $(LDLIBS)

$(B)/libcore.a: $(OBJS)
	@rm -f $@
	ar rcs $@ $^

$(B)/obj/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE_CFLAGS) -MMD -MP -c -o $@ $<

$(B)/obj/runner_scripts.o: $(GEN)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE_CFLAGS) -c -o $@ $<

# The runners are real files (tested on their own) embedded as C strings.
RUNNERS := src/sandbox/runner/runner.py src/sandbox/runner/runner.js src/sandbox/runner/runner.pl \
           src/sandbox/runner/tscheck.js src/sandbox/runner/runner_session.py
$(GEN): $(RUNNERS) scripts/embed.sh
	@mkdir -p $(dir $@)
	scripts/embed.sh $@ runner_python_src=src/sandbox/runner/runner.py \
	    runner_node_src=src/sandbox/runner/runner.js \
	    runner_generic_src=src/sandbox/runner/runner.pl \
	    runner_tscheck_src=src/sandbox/runner/tscheck.js \
	    runner_python_session_src=src/sandbox/runner/runner_session.py

$(CONNECTOR_GEN): $(CONNECTOR) scripts/embed.sh
	@mkdir -p $(dir $@)
	scripts/embed.sh $@ channel_connect_src=$(CONNECTOR)

$(B)/obj/channel_connect.o: $(CONNECTOR_GEN)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE_CFLAGS) -c -o $@ $<

$(FORWARDER_GEN): $(FORWARDER) scripts/embed.sh
	@mkdir -p $(dir $@)
	scripts/embed.sh $@ egress_forward_src=$(FORWARDER)

$(B)/obj/egress_forward.o: $(FORWARDER_GEN)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE_CFLAGS) -c -o $@ $<

$(SECCOMP_GEN): $(SECCOMP) scripts/embed.sh
	@mkdir -p $(dir $@)
	scripts/embed.sh $@ seccomp_profile_src=$(SECCOMP)

$(B)/obj/seccomp_profile_json.o: $(SECCOMP_GEN)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE_CFLAGS) -c -o $@ $<

$(VARIABLE_NAMES_GEN): $(VARIABLE_NAMES) scripts/embed.sh
	@mkdir -p $(dir $@)
	scripts/embed.sh $@ $(foreach f,$(VARIABLE_NAMES),variables_$(basename $(notdir $(f)))_names=$(f))

$(B)/obj/variable_names.o: $(VARIABLE_NAMES_GEN)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE_CFLAGS) -c -o $@ $<

$(LANGUAGES_GEN): $(LANGUAGES_JSON) $(PROBES) scripts/embed.sh
	@mkdir -p $(dir $@)
	scripts/embed.sh $@ langtable_builtin_src=$(LANGUAGES_JSON) \
	    languages_probe_python=src/tools/probes/python.py languages_probe_node=src/tools/probes/node.js

$(B)/obj/languages_builtin.o: $(LANGUAGES_GEN)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE_CFLAGS) -c -o $@ $<

# A host program built from the daemon's own validator, so a bad definition
# fails here rather than at the daemon's start; one for every build flavour.
TOOLDEFS_CHECK_SRCS := src/tools/tooldefs_check.c src/tools/tooldef.c src/tools/schema.c \
                       src/tools/schema_check.c src/base/err.c src/base/json.c src/base/jsonpos.c \
                       src/base/util.c src/base/buf.c
build/tooldefs-check: $(TOOLDEFS_CHECK_SRCS) $(wildcard src/tools/*.h src/base/*.h)
	@mkdir -p $(dir $@)
	$(CC) -O1 $(BASE_CFLAGS) -o $@ $(TOOLDEFS_CHECK_SRCS) $(LDLIBS)

$(TOOL_DEFS_GEN): $(TOOL_DEFS) build/tooldefs-check scripts/embed.sh
	@mkdir -p $(dir $@)
	build/tooldefs-check $(TOOL_DEFS)
	scripts/embed.sh $@ $(foreach f,$(TOOL_DEFS),tooldef_$(basename $(notdir $(f)))=$(f))

$(B)/obj/tool_defs.o: $(TOOL_DEFS_GEN)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE_CFLAGS) -c -o $@ $<

# config/mcp-sandboxd.conf is the option table (src/base/config_table.c)
# printed by build/config-sample: `make` fails when the committed file is
# not what the table gives, and `make config-sample` rewrites it.
CONFIG_SAMPLE := config/mcp-sandboxd.conf
$(B)/config-sample: $(B)/obj/base/config_sample.o $(B)/libcore.a
	$(CC) $(CFLAGS) $(BASE_CFLAGS) -o $@ $^ $(LDFLAGS) $(LDLIBS)

$(B)/config-sample.ok: $(B)/config-sample $(CONFIG_SAMPLE)
	@$(B)/config-sample >$@.new
	@if ! cmp -s $@.new $(CONFIG_SAMPLE); then \
	    echo "$(CONFIG_SAMPLE) is not what the option table (src/base/config_table.c) gives;" \
	         "run 'make config-sample' to rewrite it from the table, then commit it. The difference:" >&2; \
	    diff -u $(CONFIG_SAMPLE) $@.new | head -40 >&2; \
	    rm -f $@.new; exit 1; \
	fi
	@mv $@.new $@

config-sample: $(B)/config-sample
	$(B)/config-sample >$(B)/config-sample.new
	mv $(B)/config-sample.new $(CONFIG_SAMPLE)

# What the unit tests link besides libcore: the fakes they run against
# (the Engine API, tests/fake_engine; a backend, tests/fake_backend; the
# program the sandboxes of both run, tests/fake_program; an HTTPS server
# and a WebSocket peer for the Kubernetes API client, tests/fake_kube) and
# the backend conformance suite (tests/backend_conformance).
TESTLIB_SRCS := $(wildcard tests/fake_engine/*.c tests/fake_backend/*.c tests/fake_program/*.c tests/fake_kube/*.c) \
                tests/backend_conformance/conformance.c
TESTLIB      := $(patsubst tests/%.c,$(B)/testlib/%.o,$(TESTLIB_SRCS))
$(B)/testlib/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE_CFLAGS) -Itests -MMD -MP -c -o $@ $<

$(B)/tests/%: tests/unit/%.c $(TESTLIB) $(B)/libcore.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE_CFLAGS) -Itests -Wno-missing-prototypes -Wno-missing-declarations -Wno-write-strings \
	    -MMD -MP -o $@ $< $(TESTLIB) $(B)/libcore.a $(LDFLAGS) $(LDLIBS) -lcmocka

# The backend conformance suite against a real engine (tests/integration/run.sh).
$(B)/backend-conformance: tests/backend_conformance/engine_main.c $(TESTLIB) $(B)/libcore.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE_CFLAGS) -Itests -o $@ $< $(TESTLIB) $(B)/libcore.a $(LDFLAGS) $(LDLIBS) -lcmocka

-include $(wildcard $(B)/obj/*.d $(B)/obj/*/*.d $(B)/obj/*/*/*.d $(B)/testlib/*/*.d \
                     $(B)/tests/*/*.d $(B)/tests/*/*/*.d)

# ---- running -------------------------------------------------------------
deps:
	@scripts/deps.sh --engines

# LANGUAGES=python,javascript builds a subset (names or aliases).
images: all
	@$(if $(LANGUAGES),MCPSANDBOXD_LANGUAGES=$(LANGUAGES)) scripts/images.sh

# The daemon's own image, for deploy/kubernetes (containers/daemon).
daemon-image: all
	@scripts/images.sh --daemon

run:
	@scripts/run.sh $(ARGS)

# ---- testing -------------------------------------------------------------
unit: $(UNIT_BINS)
	@scripts/run-unit.sh $(UNIT_BINS)

# The in-container runners, run directly with the host's interpreters.
runner-test:
	@tests/runner/test_runners.sh

asan:
	$(MAKE) SANITIZER=address all

asan-unit:
	$(MAKE) SANITIZER=address unit

# ThreadSanitizer over the unit tests, the concurrency stress tests among
# them. TSan cannot see inside the uninstrumented libjson-c, which is why
# no json-c object may ever be reachable from two threads (mcp.h).
tsan:
	$(MAKE) SANITIZER=thread all
	TSAN_OPTIONS='halt_on_error=1 second_deadlock_stack=1' $(MAKE) SANITIZER=thread unit

valgrind: $(UNIT_BINS) $(B)/mcp-sandboxd
	@scripts/valgrind.sh $(UNIT_BINS)

# Every harness for FUZZ_SECONDS (default 300 each), executions reported;
# make test runs the short smoke (20 s each, its corpus replayed first).
fuzz:
	@FUZZ_SECONDS=$${FUZZ_SECONDS:-300} scripts/fuzz.sh smoke

fuzz-smoke:
	@scripts/fuzz.sh smoke

gen-srcs:
	@echo $(GEN_SRCS)

lint:
	@scripts/lint.sh
	@tests/lint/test_layering.sh
	@tests/lint/test_paths.sh

format:
	clang-format -i $(wildcard src/*.c src/*/*.[ch] src/*/*/*.[ch]) $(wildcard tests/unit/*.[ch] tests/unit/*/*.[ch] tests/unit/*/*/*.[ch]) tests/fake_engine/*.[ch] tests/fake_backend/*.[ch] tests/fake_program/*.[ch] tests/fake_kube/*.[ch] tests/backend_conformance/*.[ch] tests/fuzz/*.[ch]

format-check:
	@scripts/lint.sh format

integration: all asan $(B)/backend-conformance
	@tests/integration/run.sh

# Kills and stalls the engines on purpose (restarts them afterwards).
faults: all
	@tests/faults/run.sh

# The hostile battery: Docker, Podman and Docker under gVisor, pooled and on
# demand (~9 min).
security: all
	@tests/security/run.sh

# Many clients at once over loopback HTTP and stdio (about a minute).
load: all
	@tests/load/run.sh

conformance: all
	@tests/conformance/run.sh

test:
	@scripts/deps.sh --engines --test --gvisor
	$(MAKE) all
	$(MAKE) lint
	$(MAKE) unit
	$(MAKE) runner-test
	$(MAKE) asan-unit
	$(MAKE) tsan
	$(MAKE) valgrind
	$(MAKE) fuzz-smoke
	$(MAKE) integration
	$(MAKE) security
	$(MAKE) faults
	$(MAKE) load

# The bench's physical limit: libmicrohttpd alone (tests/bench/bare-mhd.c).
build/bench/bare-mhd: tests/bench/bare-mhd.c
	@mkdir -p $(dir $@)
	$(CC) -O2 $(BASE_CFLAGS) -Wno-missing-prototypes -o $@ $< $(LDLIBS)

bench: all build/bench/bare-mhd
	@scripts/bench.sh

# BASE=<commit>: its daemon and this tree's, side by side in one run
# (tools/list throughput and warm runs; scripts/bench-compare.sh).
bench-compare: all
	@scripts/bench-compare.sh $(BASE)

install: $(B)/mcp-sandboxd
	install -D -m 0755 $(B)/mcp-sandboxd $(DESTDIR)$(PREFIX)/bin/mcp-sandboxd

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/mcp-sandboxd

clean:
	rm -rf build
