# A thin wrapper: meson and ninja do the building.  `make demo` and
# `make check` install what is missing first (tools/install-deps.sh).
BUILD := build
CHECK := build-check
MESON_TEST := meson test --print-errorlogs --num-processes 2

.PHONY: all deps build demo check bench clean

all: build

deps:
	@tools/install-deps.sh

build: deps
	@[ -f $(BUILD)/build.ninja ] || meson setup $(BUILD)
	ninja -C $(BUILD)

demo: build
	@tools/demo.sh $(BUILD)

# The whole suite, built with ASan+UBSan.
check: deps
	@[ -f $(CHECK)/build.ninja ] || meson setup $(CHECK) \
		-Dbuildtype=debug -Db_sanitize=address,undefined -Db_lundef=false
	ninja -C $(CHECK)
	@status=0; \
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		$(MESON_TEST) -C $(CHECK) || status=$$?; \
	tools/test-summary.sh $(CHECK); exit $$status

# Packet-layer throughput, vmpt vs libipt (bench/README.md); not in check.
bench: deps
	@bench/run.sh

clean:
	rm -rf $(BUILD) $(CHECK)
