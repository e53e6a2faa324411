"""The data sources of the prompt sets (Sec. 6), one module each, defining SOURCE
(grpo_repro.data.sources.Source): the registry grpo_repro.data.sources.SOURCES finds them by name."""
