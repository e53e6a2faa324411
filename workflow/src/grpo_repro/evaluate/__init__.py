"""Stage evaluate (Sec. 6): `run` (n samples per prompt of one checkpoint -> per-prompt success
table, in resumable chunks), `job` (every table of one run), `scoring` (strict and lenient rewards,
Wilson intervals), `tasks` (the tables a run's evaluation writes)."""
