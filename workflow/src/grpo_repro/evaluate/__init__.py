"""Stage evaluate (Sec. 6): `run` (n samples per prompt of one checkpoint -> per-prompt success
table), `scoring` (strict and lenient rewards, Wilson intervals), `partial` (resumable chunks)."""
