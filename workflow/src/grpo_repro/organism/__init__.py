"""The CPU model organism: GSM8K-format arithmetic word problems, a word-level tokenizer and a
small Qwen2 causal LM, so that the paper's experiment (Sec. 6) runs offline on a laptop CPU."""
