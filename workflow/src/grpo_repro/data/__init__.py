"""Stage data (Sec. 6): the prompt sets. `sources` is the registry of data sources (data.source:
the organism, GSM8K) and their interface; `organism` generates GSM8K-format word problems;
`gsm8k` loads GSM8K (hub or local JSONL); `sets` renders the questions and splits and pools them;
`prepare` is the rule data_prepare (and builds the organism's word-level tokenizer)."""
