# man/build.mk - the manual pages, written in scdoc(5): NAME.SECTION.scd
# becomes build/man/manSECTION/NAME.SECTION (so MANPATH=build/man works).
MAN_SRCS  := $(sort $(wildcard man/*.scd))
MAN_PAGES := $(foreach s,$(MAN_SRCS),$(B)/man/man$(subst .,,$(suffix $(basename $(s))))/$(notdir $(basename $(s))))
SCDOC	  ?= scdoc

define man_rule
$(1): $(2)
	@mkdir -p $$(dir $$@)
	$$(SCDOC) <$$< >$$@.tmp && mv $$@.tmp $$@ || { rm -f $$@.tmp; false; }
endef
$(foreach s,$(MAN_SRCS),$(eval $(call man_rule,$(B)/man/man$(subst .,,$(suffix $(basename $(s))))/$(notdir $(basename $(s))),$(s))))

ALL += $(MAN_PAGES)
