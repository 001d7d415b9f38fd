# Build rules shared by the examples (PrIM's layout). An application's Makefile sets its own
# variables, then includes this file:
#
#   TYPE ?= INT64              # (an app with an element type)
#   APP_DEFINES := -D$(TYPE)   # defines of the app's own on both compiles; a change rebuilds both
#   include ../common/app.mk
#
# It builds $(BUILDDIR)/host_code (UPMEM host API) and $(BUILDDIR)/dpu_code (DPU kernel), with
# support/ and this directory on the include path of both.
NR_DPUS ?= 1
NR_TASKLETS ?= 16
BL ?= 10
BUILDDIR ?= bin
DPU_CC ?= dpu-upmem-dpurte-clang

COMMON_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
HOST_TARGET := $(BUILDDIR)/host_code
DPU_TARGET := $(BUILDDIR)/dpu_code
HOST_SOURCES := $(wildcard host/*.c)
DPU_SOURCES := $(wildcard dpu/*.c)
HEADERS := $(wildcard support/*.h) $(wildcard $(COMMON_DIR)/*.h)
DPU_DEFINES = $(strip -DNR_TASKLETS=$(NR_TASKLETS) -DBL=$(BL) $(APP_DEFINES))
# an empty file named after the parameters: a change of NR_DPUS, NR_TASKLETS, BL or APP_DEFINES
# (-DINT32 -> _INT32) rebuilds both binaries
CONF := $(BUILDDIR)/.conf_$(NR_DPUS)_$(NR_TASKLETS)_$(BL)$(subst $() ,,$(patsubst -D%,_%,$(APP_DEFINES)))

all: $(HOST_TARGET) $(DPU_TARGET)

$(CONF):
	mkdir -p $(BUILDDIR)
	rm -f $(BUILDDIR)/.conf_*
	touch $@

$(HOST_TARGET): $(HOST_SOURCES) $(HEADERS) $(CONF)
	$(CC) -o $@ $(HOST_SOURCES) -std=c11 -O2 -Wall -Wextra -Isupport -I$(COMMON_DIR) $$(dpu-pkg-config --cflags --libs dpu) \
		-DNR_DPUS=$(NR_DPUS) $(DPU_DEFINES)

$(DPU_TARGET): $(DPU_SOURCES) $(HEADERS) $(CONF)
	$(DPU_CC) -O2 -Wall -Isupport -I$(COMMON_DIR) $(DPU_DEFINES) -o $@ $(DPU_SOURCES)

clean:
	rm -rf $(BUILDDIR)

.PHONY: all clean
